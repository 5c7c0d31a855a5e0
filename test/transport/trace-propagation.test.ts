import anyTest, { type TestFn } from "ava";
import { context, trace, type SpanContext } from "@opentelemetry/api";
import { NatsTransport } from "../../transport/nats-transport.ts";
import {
  extractTraceContext,
  injectTraceContext,
  startConsumerSpan,
  withConsumerSpan,
  withTraceHeaders,
} from "../../transport/trace-context.ts";
import { headerValue, type InboundMessage } from "../../transport/transport.ts";
import { setupTracing, type TracingHandle } from "../../actors/runtime/telemetry/tracing.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

interface Ctx extends NatsTestContext {
  tracing: TracingHandle;
  a: NatsTransport;
  b: NatsTransport;
}
const test = anyTest as TestFn<Ctx>;
withNatsServer(test);

test.before(async (t) => {
  t.context.tracing = setupTracing({ serviceName: "trace-propagation-test", exporter: "memory" });
  t.context.a = await NatsTransport.connect({ servers: t.context.nats.url, name: "sender" });
  t.context.b = await NatsTransport.connect({ servers: t.context.nats.url, name: "receiver" });
  t.context.defer(() => t.context.tracing.shutdown());
  t.context.defer(() => Promise.all([t.context.a.close(), t.context.b.close()]));
});

let n = 0;
const subject = () => `trace.t${++n}`;

/** Subscribes to `subj`; once this resolves the subscription is in effect and `got` yields the first message. */
async function nextMessage(b: NatsTransport, subj: string): Promise<{ got: Promise<InboundMessage> }> {
  let resolve!: (m: InboundMessage) => void;
  const got = new Promise<InboundMessage>((r) => (resolve = r));
  const sub = b.subscribe(subj, (m) => {
    sub.unsubscribe();
    resolve(m);
  });
  await b.flush();
  return { got }; // wrapped: an async function would otherwise wait for the message itself
}

function finishedSpan(t: { context: Ctx }, sc: SpanContext) {
  return t.context.tracing.memoryExporter!.getFinishedSpans().find((s) => s.spanContext().spanId === sc.spanId);
}

test("a span started before publish is the parent of the subscriber's span across a real NATS hop", async (t) => {
  const { a, b, tracing } = t.context;
  const subj = subject();
  const { got: received } = await nextMessage(b, subj);
  const sender = tracing.tracer.startSpan("send");
  context.with(trace.setSpan(context.active(), sender), () => a.publish(subj, new Uint8Array([1])));
  sender.end();

  const msg = await received;
  t.truthy(headerValue(msg.headers, "traceparent"), "traceparent travelled in the NATS headers");
  const consumer = startConsumerSpan(tracing.tracer, "receive", msg);
  consumer.end();

  const done = finishedSpan(t, consumer.spanContext());
  t.is(done?.spanContext().traceId, sender.spanContext().traceId);
  t.is(done?.parentSpanContext?.spanId, sender.spanContext().spanId);
  t.is(done?.attributes["messaging.destination.name"], subj);
});

test("a message published outside any span gives the subscriber a new root span", async (t) => {
  const { a, b, tracing } = t.context;
  const subj = subject();
  const { got: received } = await nextMessage(b, subj);
  a.publish(subj, new Uint8Array([2]));
  const msg = await received;
  t.is(headerValue(msg.headers, "traceparent"), undefined);
  const consumer = startConsumerSpan(tracing.tracer, "receive", msg);
  consumer.end();
  t.is(finishedSpan(t, consumer.spanContext())?.parentSpanContext, undefined);
});

test("request and reply carry the requester's trace to the responder", async (t) => {
  const { a, b, tracing } = t.context;
  const subj = subject();
  b.subscribe(subj, (m) => {
    void withConsumerSpan(tracing.tracer, "serve", m, () => b.respond(m, new Uint8Array([9])));
  });
  await b.flush();
  const requester = tracing.tracer.startSpan("ask");
  await context.with(trace.setSpan(context.active(), requester), () => a.request(subj, new Uint8Array([1]), { timeoutMs: 5_000 }));
  requester.end();
  const serve = tracing.memoryExporter!.getFinishedSpans().find((s) => s.name === "serve" && s.spanContext().traceId === requester.spanContext().traceId);
  t.is(serve?.parentSpanContext?.spanId, requester.spanContext().spanId);
});

test("withConsumerSpan records a thrown error on the span and rethrows it", async (t) => {
  const { tracing } = t.context;
  const msg: InboundMessage = { subject: "x.y", data: new Uint8Array(), headers: {} };
  await t.throwsAsync(
    withConsumerSpan(tracing.tracer, "fails", msg, () => {
      throw new Error("boom");
    }),
    { message: "boom" },
  );
  const span = tracing.memoryExporter!.getFinishedSpans().find((s) => s.name === "fails");
  t.is(span?.status.code, 2);
  t.is(span?.events[0]?.name, "exception");
});

test("extract finds traceparent whatever the header-name case", (t) => {
  const { tracing } = t.context;
  const span = tracing.tracer.startSpan("origin");
  const headers = injectTraceContext({}, trace.setSpan(context.active(), span));
  span.end();
  const value = headers["traceparent"];
  t.truthy(value);
  const shouted = { TraceParent: value! };
  const sc = trace.getSpanContext(extractTraceContext(shouted));
  t.is(sc?.spanId, span.spanContext().spanId);
  t.is(sc?.isRemote, true);
});

test("withTraceHeaders keeps a caller-supplied traceparent and copies the input", (t) => {
  const { tracing } = t.context;
  const explicit = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const input = { Traceparent: explicit, other: "1" };
  const span = tracing.tracer.startSpan("ambient");
  const out = context.with(trace.setSpan(context.active(), span), () => withTraceHeaders(input));
  span.end();
  t.is(headerValue(out, "traceparent"), explicit);
  t.is(Object.keys(out).filter((k) => k.toLowerCase() === "traceparent").length, 1);
  t.not(out, input);
  t.deepEqual(input, { Traceparent: explicit, other: "1" });
});
