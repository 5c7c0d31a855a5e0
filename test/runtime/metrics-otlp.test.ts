/**
 * Metrics over OTLP: a role whose metrics config names an OTLP/HTTP URL pushes its instruments
 * there (OTLP JSON), beside or instead of the Prometheus endpoint. A real local HTTP receiver on
 * 127.0.0.1 takes the exports.
 */
import test from "ava";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { serveMetrics } from "../../actors/runtime/metrics-endpoint.ts";
import { holderRoleSchema } from "../../actors/runtime/role-config.ts";

interface OtlpJson {
  resourceMetrics: { scopeMetrics: { metrics: { name: string; sum?: { dataPoints: { asInt?: string | number; asDouble?: number; attributes: { key: string; value: { stringValue?: string } }[] }[] } }[] }[] }[];
}

async function body(req: IncomingMessage): Promise<string> {
  let s = "";
  for await (const chunk of req) s += String(chunk);
  return s;
}

test.serial("a role with an OTLP metrics URL pushes its counters to the collector, and again at close", async (t) => {
  const received: { path: string; type: string; doc: OtlpJson }[] = [];
  const server = createServer((req, res) => {
    void body(req).then((text) => {
      received.push({ path: req.url ?? "", type: req.headers["content-type"] ?? "", doc: JSON.parse(text) as OtlpJson });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/metrics`;
  let admitted = 3;
  const endpoint = await serveMetrics({ role: "holder", id: "h-otlp", counters: () => ({ admitted }) }, { otlp: { url, intervalMs: 200 } });
  t.is(endpoint.url, undefined, "no Prometheus endpoint without a port");
  for (let i = 0; i < 100 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  t.true(received.length >= 1, "at least one export arrived");
  t.is(received[0]!.path, "/v1/metrics");
  t.regex(received[0]!.type, /application\/json/);
  admitted = 7;
  await endpoint.close();
  const last = received.at(-1)!.doc;
  const metric = last.resourceMetrics.flatMap((r) => r.scopeMetrics).flatMap((s) => s.metrics).find((m) => m.name === "custody_events");
  t.truthy(metric, JSON.stringify(last));
  const point = metric!.sum!.dataPoints.find((p) => p.attributes.some((a) => a.key === "event" && a.value.stringValue === "admitted"));
  t.is(Number(point?.asInt ?? point?.asDouble), 7, "the export at close carries the value read then");
});

test("a metrics section is strict: an unknown key under otlp is an error naming its path, and one of port or otlp is required", (t) => {
  const base = { role: "holder", nats: { servers: "nats://127.0.0.1:4222" }, controlRegion: "r", stateDir: "/tmp/s", keyFile: "/tmp/k", holder: {} };
  const unknown = holderRoleSchema.safeParse({ ...base, metrics: { otlp: { url: "http://127.0.0.1:4318/v1/metrics", every: 5 } } });
  t.false(unknown.success);
  t.true(unknown.error!.issues.some((i) => i.path.join(".") === "metrics.otlp" && i.code === "unrecognized_keys"), JSON.stringify(unknown.error!.issues));
  const neither = holderRoleSchema.safeParse({ ...base, metrics: { host: "0.0.0.0" } });
  t.false(neither.success);
  t.true(neither.error!.issues.some((i) => i.path[0] === "metrics"), JSON.stringify(neither.error!.issues));
  const notHttp = holderRoleSchema.safeParse({ ...base, metrics: { otlp: { url: "ftp://collector/v1/metrics" } } });
  t.true(notHttp.error!.issues.some((i) => i.path.join(".") === "metrics.otlp.url"), JSON.stringify(notHttp.error?.issues));
});
