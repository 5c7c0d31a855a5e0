/**
 * Repair progress on `/metrics`: a controller's repairs of declared failures per state, and the
 * bytes they copied, follow its status document. Real nats-servers (a supercluster), real holder
 * actors, a real repair copying the failed holder's ranges to a standby.
 */
import anyTest, { type TestFn } from "ava";
import { serveMetrics } from "../../actors/runtime/metrics-endpoint.ts";
import { freePort } from "../kit/nats-server.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE } from "../e2e/deployment.ts";
import { blockData, eventually } from "../e2e/e2e-fixture.ts";
import { sample } from "../kit/prometheus-sample.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

test.serial("a controller's repair gauges follow a declared failure's repair: none before, one done with the bytes it copied after", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-met-rep", "use-met-rep", { releasable: ["h-e2"], repair: { standby: [{ holderId: "h-e3", site: "s-e3" }], bandwidthBytesPerSec: 125_000_000 } });
  t.context.defer(() => d.stop());
  const ctl = d.controller;
  const endpoint = await serveMetrics({ role: "controller", id: ctl.id, counters: () => ctl.counters.snapshot(), status: () => ctl.status() }, { port: await freePort() });
  t.context.defer(() => endpoint.close());
  const scrape = async () => await (await fetch(endpoint.url!)).text();
  const volume = "vol-met-rep";

  for (let i = 0; i < 40; i++) await d.writer.write((i * 13) % BLOCKS, blockData(8000 + i));
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  await eventually(() => (ctl.status()?.acknowledged[0]?.[1] ?? 0) >= head, "controller saw the writes", 5000);
  const before = await scrape();
  for (const state of ["needed", "running", "done", "failed"]) t.is(sample(before, "custody_repairs", { volume, state }), 0, before);

  await d.kill("h-e1");
  const { seq: failureSeq } = await d.declareFailure({ holder: "h-e1" });
  let after = "";
  const seen = new Set<string>();
  for (let i = 0; i < 400; i++) {
    after = await scrape();
    for (const state of ["needed", "running"]) if ((sample(after, "custody_repairs", { volume, state }) ?? 0) > 0) seen.add(state);
    if (sample(after, "custody_repairs", { volume, state: "done" }) === 1) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.log(`states seen on the way: ${[...seen].join(", ") || "none (the repair ended between two scrapes)"}`);
  const rep = ctl.repairs().find((r) => r.failureSeq === failureSeq);
  t.is(rep?.state, "done", JSON.stringify(ctl.repairs()));
  t.is(sample(after, "custody_repairs", { volume, state: "done" }), 1, after);
  t.is(sample(after, "custody_repairs", { volume, state: "running" }), 0);
  t.is(sample(after, "custody_repair_copied_bytes", { volume, state: "done" }), rep!.copiedBytes, "the gauge carries the bytes the repair copied");
  t.true((rep!.copiedBytes ?? 0) > 0);
});
