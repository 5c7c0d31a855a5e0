import test from "ava";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { context, propagation, trace } from "@opentelemetry/api";
import { isCustodyError } from "../../core/custody-error.ts";
import { otlpEndpointConfigured, setupTracing } from "../../actors/runtime/telemetry/tracing.ts";
import type { JsonlSpanRecord } from "../../actors/runtime/telemetry/jsonl-span-exporter.ts";

// One process-global registration at a time, so these tests run one after another.

test.serial("the jsonl exporter writes one parseable line per span with ids, parent, links and resource", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-jsonl-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "spans.jsonl");
  const tracing = setupTracing({
    serviceName: "jsonl-test",
    attributes: { "custody.region": "us-east" },
    exporter: "jsonl",
    jsonlPath: path,
  });
  const parent = tracing.tracer.startSpan("parent", { attributes: { "custody.volume": "vol-1" } });
  const other = tracing.tracer.startSpan("other");
  other.end();
  const child = tracing.tracer.startSpan("child", { links: [{ context: other.spanContext() }] }, trace.setSpan(context.active(), parent));
  child.addEvent("sealed", { units: 3 });
  child.end();
  parent.end();
  await tracing.shutdown();

  const lines = readFileSync(path, "utf8").trimEnd().split("\n");
  t.is(lines.length, 3);
  const records = lines.map((l) => JSON.parse(l) as JsonlSpanRecord);
  const byName = new Map(records.map((r) => [r.name, r]));
  const p = byName.get("parent")!;
  const c = byName.get("child")!;
  t.regex(p.traceId, /^[0-9a-f]{32}$/);
  t.regex(p.spanId, /^[0-9a-f]{16}$/);
  t.is(p.parentSpanId, undefined);
  t.is(c.traceId, p.traceId);
  t.is(c.parentSpanId, p.spanId);
  t.deepEqual(c.links, [{ traceId: other.spanContext().traceId, spanId: other.spanContext().spanId, attributes: {} }]);
  t.is(c.events[0]?.name, "sealed");
  t.is(p.attributes["custody.volume"], "vol-1");
  t.is(p.resource["service.name"], "jsonl-test");
  t.is(p.resource["custody.region"], "us-east");
  t.true(BigInt(c.endUnixNano) >= BigInt(c.startUnixNano));
  t.false(Number.isNaN(Date.parse(c.startTime)));
});

test.serial("setupTracing registers the W3C propagator and shutdown unregisters it", async (t) => {
  const tracing = setupTracing({ serviceName: "w3c-test", exporter: "memory" });
  const span = tracing.tracer.startSpan("s");
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  span.end();
  t.regex(carrier["traceparent"] ?? "", new RegExp(`^00-${span.spanContext().traceId}-${span.spanContext().spanId}-01$`));
  t.is(tracing.memoryExporter?.getFinishedSpans().length, 1);
  await tracing.shutdown();
  await t.notThrowsAsync(tracing.shutdown(), "shutdown is idempotent");
  const after: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), after);
  t.deepEqual(after, {});
});

test.serial("the active span follows async code (async-hooks context manager)", async (t) => {
  const tracing = setupTracing({ serviceName: "ctx-test", exporter: "memory" });
  t.teardown(() => tracing.shutdown());
  const span = tracing.tracer.startSpan("outer");
  const seen = await context.with(trace.setSpan(context.active(), span), async () => {
    await new Promise((r) => setTimeout(r, 1));
    return trace.getActiveSpan()?.spanContext().spanId;
  });
  span.end();
  t.is(seen, span.spanContext().spanId);
});

test.serial("jsonl without a path is rejected", (t) => {
  const err = t.throws(() => setupTracing({ serviceName: "x", exporter: "jsonl" }), { message: /jsonlPath/ });
  t.true(isCustodyError(err, "invalid_tracing_config"));
});

test.serial("the otlp exporter POSTs finished spans over HTTP to the configured endpoint", async (t) => {
  const bodies: Array<{ url: string; body: string }> = [];
  const collector = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      bodies.push({ url: req.url ?? "", body });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => collector.close(() => r())));
  const { port } = collector.address() as AddressInfo;
  const tracing = setupTracing({ serviceName: "otlp-test", exporter: "otlp", otlpUrl: `http://127.0.0.1:${port}/v1/traces` });
  tracing.tracer.startSpan("exported-over-otlp").end();
  await tracing.shutdown();
  t.is(bodies.length, 1);
  t.is(bodies[0]?.url, "/v1/traces");
  t.true(bodies[0]?.body.includes("exported-over-otlp"));
});

test("OTLP export is chosen only when an OTLP endpoint is configured", (t) => {
  t.false(otlpEndpointConfigured({}));
  t.true(otlpEndpointConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }));
  t.true(otlpEndpointConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" }));
});
