import anyTest, { type TestFn } from "ava";
import { runRepair } from "../../actors/repair.ts";
import { authorizeReleases } from "../../policies/release.ts";
import { withSupercluster, type SuperclusterTestContext } from "../helpers/index.ts";
import { blockData, contentAt, eventually, readVolume } from "./e2e-fixture.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, type Deployment } from "./deployment.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

async function writeSome(d: Deployment, n: number, seed: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const lba = (seed * 37 + i * 11) % BLOCKS; // some LBAs are overwritten: order matters
    await d.writer.write(lba, blockData(seed * 1000 + i));
  }
}

/** Every committed release re-evaluated by the policy engine on the exact state it was decided on. */
function checkReleases(t: { true(v: boolean, m?: string): void; deepEqual(a: unknown, b: unknown, m?: string): void }, d: Deployment): number {
  for (const a of d.controller.core.audits) {
    const upTo = a.grantedTogether.slice(0, a.grantedTogether.indexOf(a.request) + 1);
    const again = authorizeReleases(a.state, upTo);
    t.true(again.every((x) => x.allowed), `release ${a.request.holder} ${a.request.ranges.toString()} at control seq ${a.controlSeq} is one the policy engine grants`);
  }
  return d.controller.core.audits.length;
}

test.serial("a write acknowledged under 'survive loss of the writer's AZ' is recovered byte-exact at another site after that AZ's writer and holders die, via repair and recovery", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-az", "use-az");
  t.context.defer(() => d.stop());
  await writeSome(d, 40, 1);
  const { heads } = await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  const acked = heads[LANE]!;
  t.true(d.writer.writer.core.protectedThrough(AZ_CONTRACT.name, LANE) >= acked);
  const writes = [...d.writer.writes];
  const ackedLsn = Math.max(...writes.map((w) => w.lsn));
  await eventually(() => (d.controller.core.status?.acknowledged[0]?.[1] ?? 0) >= acked, "controller saw the writer's progress", 5000);

  // The writer's AZ dies: the writer and its same-AZ holder.
  await d.writer.close();
  await d.kill("h-e1");
  await d.controller.core.commit(() => ({ type: "declare_failure", scope: "zone", domain: "us-east/use1-az1", holderIds: ["h-e1"] }));

  const replacement = await d.startReplacement("h-e3", "s-e3");
  const report = await runRepair({
    repairId: "repair-az1",
    volume: d.volume,
    lanes: [LANE],
    failed: ["h-e1"],
    replacement,
    survivors: d.survivors().filter((s) => s.holderId !== "h-e3"),
    controller: d.controller.core,
    transport: d.holders.get("h-e2")!.transport,
    clock: { now: () => Date.now(), setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout) },
    repairBandwidthBytesPerSec: 125_000_000,
  });
  t.log(`repair: ${report.copiedUnits} units, ${report.copiedBytes} B in ${report.measuredMs} ms; policy estimate ${report.estimate.totalSec.toFixed(3)} s`);
  t.true(report.copiedUnits > 0);
  const e3 = d.holders.get("h-e3")!.holder.core.lanes.get(`${d.volume}/${LANE}`)!;
  t.true(e3.log.retained.coversAll(d.controller.core.ledger.holdings({ holderId: "h-e3" })[0]!.retained));

  // Recovery at US-West from what survives (the writer's AZ is gone).
  const { dir, result } = await d.recover("s-usw", d.survivors());
  t.true(result.cut[LANE]! >= acked, `recovered cut ${result.cut[LANE]} includes the acknowledged ${acked}`);
  const got = await readVolume(dir, BLOCKS);
  t.true(Buffer.from(got).equals(Buffer.from(contentAt(writes, BLOCKS, result.lsn))), "byte-exact at the recovered cut");
  t.true(result.lsn >= ackedLsn);
  t.true(checkReleases(t, d) >= 0);
});
