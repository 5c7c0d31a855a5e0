/**
 * A holder's `/metrics` beyond its counters: bytes in custody per lane and residency, credits
 * outstanding, units rejected by code and the receipt latency histogram. Real nats-server, a real
 * holder actor fed by a credit-bound writer, scraped over HTTP from OpenTelemetry's Prometheus exporter.
 */
import anyTest, { type ExecutionContext, type TestFn } from "ava";
import type { HolderConfigInput } from "../../actors/holder/holder-config.ts";
import type { HolderPorts } from "../../actors/holder/holder-ports.ts";
import { join } from "node:path";
import { nodeFileLayer } from "../../core/index.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { serveMetrics } from "../../actors/runtime/metrics-endpoint.ts";
import { HolderMetrics } from "../../actors/runtime/metrics-holder.ts";
import { freePort } from "../kit/nats-server.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { eventually, holderConfig, KeyRing, launchHolder, LANE, publishRelease, tempDir, transport, unit, VOLUME, watchReceipts, Writer } from "../holder/holder-fixture.ts";
import { sample } from "../kit/prometheus-sample.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

/** A holder whose observations feed HolderMetrics behind a `/metrics` endpoint, and a writer sending to it; all closed at teardown. */
async function holderWithMetrics(t: ExecutionContext<NatsTestContext>, cfg: HolderConfigInput, ports: Partial<HolderPorts> = {}) {
  const metrics = new HolderMetrics();
  const h = await launchHolder(t.context.nats.url, new KeyRing(), cfg, { observe: (o) => metrics.observe(o), ...ports });
  metrics.attach(h.holder);
  const endpoint = await serveMetrics({ role: "holder", id: cfg.holderId, counters: () => h.holder.counters.snapshot(), holder: metrics }, { port: await freePort() });
  const wt = await transport(t.context.nats.url, `writer-${cfg.holderId}`);
  const receipts = watchReceipts(wt);
  const w = new Writer(wt, cfg.holderId);
  t.teardown(async () => {
    receipts.stop();
    w.sender.close();
    await wt.close();
    await endpoint.close();
    await h.close();
  });
  return { h, endpoint, wt, receipts, w };
}

test.serial("a holder's metrics: custody bytes rise after writes and fall after release, a bad unit counts under its code, receipts fill the latency histogram", async (t) => {
  const { h, endpoint, wt, receipts, w } = await holderWithMetrics(t, holderConfig("h-met"));
  const scrape = async () => await (await fetch(endpoint.url!)).text();
  const lane = { holder: "h-met", volume: VOLUME, lane: LANE };

  const empty = await scrape();
  t.is(sample(empty, "custody_holder_custody_bytes", { ...lane, residency: "ram" }), 0, empty);
  t.not(sample(empty, "custody_holder_credits_outstanding_bytes", lane), undefined, "credits outstanding are published per lane");

  for (let s = 1; s <= 10; s++) w.send(unit(s));
  const bad = unit(11);
  bad.payload[0]! ^= 0xff; // its digest no longer matches
  w.sendRaw(encodeMessage(unitSpec, bad), 1024 + 40);
  await eventually(() => receipts.byHolder("h-met").covers(1, 10), "a receipt covering 1-10");

  const full = await scrape();
  t.true((sample(full, "custody_holder_custody_bytes", { ...lane, residency: "ram" }) ?? 0) >= 10 * 1024, full);
  t.is(sample(full, "custody_holder_custody_bytes", { ...lane, residency: "disk" }), 0);
  t.is(sample(full, "custody_holder_rejected_units_total", { ...lane, code: "digest_mismatch" }), 1, full);
  t.is(h.holder.counters.get("digest_mismatch"), 1, "the counter agrees with the holder's own count");
  t.regex(full, /# TYPE custody_holder_receipt_latency_seconds histogram/);
  const count = sample(full, "custody_holder_receipt_latency_seconds_count", { ...lane, residency: "ram" }) ?? 0;
  t.is(count, 10, "one latency per admitted unit, taken at its first receipt");

  publishRelease(wt, "h-met", h.holder.lane(VOLUME, LANE)!.retained.toJSON());
  await eventually(() => h.holder.lane(VOLUME, LANE)!.retained.isEmpty, "1-10 released");
  let after = "";
  for (let i = 0; i < 100; i++) {
    after = await scrape();
    if (sample(after, "custody_holder_custody_bytes", { ...lane, residency: "ram" }) === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.is(sample(after, "custody_holder_custody_bytes", { ...lane, residency: "ram" }), 0, after);
});

test.serial("a disk holder's metrics: what its spill stream made durable shows at disk residency, and every unit's receipt latency is measured once", async (t) => {
  const cfg = holderConfig("h-met-d", { residency: ["ram", "disk"], flush: { intervalMs: 10, deadlineMs: 2_000 } });
  const { h, endpoint, receipts, w } = await holderWithMetrics(t, cfg, { files: nodeFileLayer, spillPath: join(tempDir(), "spill.log") });
  const lane = { holder: "h-met-d", volume: VOLUME, lane: LANE };
  for (let s = 1; s <= 20; s++) w.send(unit(s, 1, 4096));
  await eventually(() => h.holder.lane(VOLUME, LANE)!.diskResident.covers(1, 20) && receipts.residencies("h-met-d").includes("disk"), "1-20 on disk and receipted there", 10_000);
  const text = await (await fetch(endpoint.url!)).text();
  t.true((sample(text, "custody_holder_custody_bytes", { ...lane, residency: "disk" }) ?? 0) >= 20 * 4096, text);
  const counts = ["ram", "disk"].map((residency) => sample(text, "custody_holder_receipt_latency_seconds_count", { ...lane, residency }) ?? 0);
  t.is(counts[0]! + counts[1]!, 20, `one latency per unit, at its first receipt whatever its residency (ram ${counts[0]}, disk ${counts[1]})`);
});
