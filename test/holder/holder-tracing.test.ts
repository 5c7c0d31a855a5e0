import anyTest, { type TestFn } from "ava";
import { context, trace } from "@opentelemetry/api";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { setupTracing, type TracingHandle } from "../../actors/runtime/telemetry/tracing.ts";
import { eventually, holderConfig, KeyRing, launchHolder, publishRelease, transport, unit, watchReceipts, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext & { tracing: TracingHandle }>;
withNatsServer(test);
test.before((t) => {
  t.context.tracing = setupTracing({ serviceName: "holder-test", exporter: "memory" });
});
test.after.always(async (t) => {
  await t.context.tracing?.shutdown();
});

test.serial("admit, forward and release spans chain across NATS hops through trace headers, and a receipt span links to the units it covers", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const b = await launchHolder(url, keys, holderConfig("tb", { upstream: ["ta"] }));
  const a = await launchHolder(url, keys, holderConfig("ta", { downstream: ["tb"] }));
  const wt = await transport(url, "writer");
  const receipts = watchReceipts(wt);
  const w = new Writer(wt, "ta");
  try {
    await eventually(() => w.sender.state.grantedThrough > 0, "initial credit");
    const root = t.context.tracing.tracer.startSpan("writer.send");
    context.with(trace.setSpan(context.active(), root), () => w.send(unit(1)));
    root.end();
    await eventually(() => receipts.byHolder("ta").has(1) && receipts.byHolder("tb").has(1), "both hops receipted");
    for (const h of ["tb", "ta"]) publishRelease(wt, h, [[1, 1]]);
    await eventually(() => a.holder.empty() && b.holder.empty(), "released");
    const spans = t.context.tracing.memoryExporter!.getFinishedSpans();
    const traceId = root.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const admits = inTrace.filter((s) => s.name === "holder.admit");
    t.is(admits.length, 2, "one admit span per hop, in the writer's trace");
    const admitA = admits.find((s) => s.parentSpanContext?.spanId === root.spanContext().spanId);
    t.truthy(admitA, "the first hop's admit span is a child of the writer's span");
    const forward = inTrace.find((s) => s.name === "holder.forward" && s.parentSpanContext?.spanId === admitA!.spanContext().spanId);
    t.truthy(forward, "forward span is a child of the admit span");
    t.truthy(admits.find((s) => s.parentSpanContext?.spanId === forward!.spanContext().spanId), "the next hop's admit span is a child of the forward span");
    const receiptSpans = spans.filter((s) => s.name === "holder.receipt");
    t.true(
      receiptSpans.some((s) => s.links.some((l) => l.context.spanId === admitA!.spanContext().spanId)),
      "a receipt span links to the admit span of a unit it covers",
    );
    t.true(spans.some((s) => s.name === "holder.release"), "release is traced");
  } finally {
    receipts.stop();
    w.sender.close();
    await wt.close();
    await a.close();
    await b.close();
  }
});
