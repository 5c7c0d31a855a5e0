import anyTest, { type TestFn } from "ava";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { context, trace } from "@opentelemetry/api";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { startConsumerSpan } from "../../transport/trace-context.ts";
import type { InboundMessage } from "../../transport/transport.ts";
import { setupTracing, type TracingHandle } from "../../actors/runtime/telemetry/tracing.ts";
import { isProcessAlive } from "../kit/nats-server.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/nats-test-context.ts";

const REGIONS = ["us-east", "us-west", "eu-central"] as const;

interface Ctx extends SuperclusterTestContext {
  tracing: TracingHandle;
  at: Record<(typeof REGIONS)[number], NatsTransport>;
}
const test = anyTest as TestFn<Ctx>;
withSupercluster(test, { regions: REGIONS });

let pids: readonly number[] = [];
let dirs: string[] = [];

test.before(async (t) => {
  const sc = t.context.supercluster;
  pids = sc.pids;
  dirs = Object.values(sc.regions).map((r) => dirname(r.storeDir));
  t.context.tracing = setupTracing({ serviceName: "supercluster-test", exporter: "memory" });
  const at = {} as Ctx["at"];
  for (const r of REGIONS) at[r] = await NatsTransport.connect({ servers: sc.regions[r]!.url, name: `client-${r}` });
  t.context.at = at;
  t.context.defer(() => t.context.tracing.shutdown());
  t.context.defer(() => Promise.all(REGIONS.map((r) => at[r].close())));
});

// Serial, registered last: runs after the fixture stopped the supercluster.
test.serial.after.always("no nats-server started by this file remains, and its files are gone", (t) => {
  t.is(pids.length, REGIONS.length);
  for (const pid of pids) t.false(isProcessAlive(pid), `nats-server pid ${pid} still running`);
  for (const dir of dirs) t.false(existsSync(dir), `${dir} still exists`);
});

/**
 * Publishes until the subscriber has the message (gateway interest propagates asynchronously,
 * so a first publish right after subscribing may legitimately be dropped); gives up after 5 s.
 */
async function publishUntilReceived(pub: NatsTransport, subj: string, got: Promise<InboundMessage>, send: () => void): Promise<InboundMessage> {
  let received: InboundMessage | undefined;
  void got.then((m) => (received = m));
  for (let i = 0; i < 50 && received === undefined; i++) {
    send();
    await pub.flush();
    await Promise.race([got, new Promise((r) => setTimeout(r, 100))]);
  }
  if (received === undefined) throw new Error(`no message on ${subj} after 50 publishes`);
  return received;
}

function firstMessage(sub: NatsTransport, subj: string): Promise<InboundMessage> {
  return new Promise((resolve) => {
    const s = sub.subscribe(subj, (m) => {
      s.unsubscribe();
      resolve(m);
    });
  });
}

test("the supercluster runs three regions, each with gateways to the other two", (t) => {
  const regions = t.context.supercluster.regions;
  t.deepEqual(Object.keys(regions).sort(), [...REGIONS].sort());
  t.is(new Set(Object.values(regions).map((r) => r.port)).size, REGIONS.length);
  for (const r of Object.values(regions)) t.regex(r.url, /^nats:\/\/127\.0\.0\.1:\d+$/);
});

test("a message published in us-east reaches a subscriber connected to eu-central", async (t) => {
  const { at } = t.context;
  const subj = "sc.cross.region";
  const got = firstMessage(at["eu-central"], subj);
  await at["eu-central"].flush();
  const msg = await publishUntilReceived(at["us-east"], subj, got, () => at["us-east"].publish(subj, new Uint8Array([0xca, 0xfe])));
  t.is(msg.subject, subj);
  t.deepEqual([...msg.data], [0xca, 0xfe]);
});

test("a span started before publish in us-east is the parent of the subscriber's span in us-west", async (t) => {
  const { at, tracing } = t.context;
  const subj = "sc.trace.gateway";
  const got = firstMessage(at["us-west"], subj);
  await at["us-west"].flush();
  const sender = tracing.tracer.startSpan("send-east");
  const msg = await publishUntilReceived(at["us-east"], subj, got, () =>
    context.with(trace.setSpan(context.active(), sender), () => at["us-east"].publish(subj, new Uint8Array([1]))),
  );
  sender.end();
  const consumer = startConsumerSpan(tracing.tracer, "receive-west", msg);
  consumer.end();
  const finished = tracing.memoryExporter!.getFinishedSpans().find((s) => s.spanContext().spanId === consumer.spanContext().spanId);
  t.is(finished?.spanContext().traceId, sender.spanContext().traceId);
  t.is(finished?.parentSpanContext?.spanId, sender.spanContext().spanId);
});
