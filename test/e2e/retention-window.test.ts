/**
 * A contract's retention window on a real multi-region deployment (supercluster, JetStream control
 * log): the holder it names keeps each sequence until the window after its commit has passed, while
 * the same contract without the window lets the other RAM tier release at once.
 */
import anyTest, { type TestFn } from "ava";
import type { ReleaseAudit } from "../../actors/controller/controller-core.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, type Deployment } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

async function deployWithWindow(t: { context: SuperclusterTestContext }, volume: string, windowMs: number): Promise<Deployment> {
  const d = await deploy(t.context.supercluster, volume, `use-${volume}`, { topology: (topo) => ({ ...topo, retention: { windowMs, holders: ["h-e1"] } }) });
  t.context.defer(() => d.stop());
  return d;
}

async function writeSome(d: Deployment, n: number, seed: number): Promise<number> {
  for (let i = 0; i < n; i++) await d.writer.write((seed * 31 + i * 7) % BLOCKS, blockData(seed * 1000 + i));
  return (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
}

const releasedAt = (d: Deployment, holder: string) => d.controller.releaseAudits().filter((a) => a.request.holder === holder).reduce((r, a) => r.union(a.request.ranges), RangeSet.EMPTY);

/** The commit time of `seq` in the state a release was decided on. */
function committedAt(a: ReleaseAudit, seq: number): number {
  const run = a.state.commits.find((c) => c.lane === a.request.lane && c.first <= seq && seq <= c.last);
  return run?.committedAtMs ?? Infinity;
}

test.serial("a contract retention window keeps the named holder's ranges that the contract alone releases: the other RAM tier releases them, the named one keeps them", async (t) => {
  const d = await deployWithWindow(t, "vol-ret-long", 3_600_000);
  const head = await writeSome(d, 60, 1);
  await eventually(() => releasedAt(d, "h-e2").intersects(RangeSet.of(1, head)), "h-e2 releases (no window binds it)", 15_000);
  await writeSome(d, 5, 2);
  await eventually(() => d.controller.counters.get("evaluations") > 20, "more evaluation rounds", 10_000);
  t.true(releasedAt(d, "h-e1").isEmpty, `h-e1 released ${releasedAt(d, "h-e1")} inside its hour-long window`);
  t.true(d.holders.get("h-e1")!.holder.lane(d.volume, LANE)!.retained.coversAll(RangeSet.of(1, head)));
});

test.serial("a range kept by a short retention window is released once the window after its commit has passed, never before", async (t) => {
  const windowMs = 2_000;
  const d = await deployWithWindow(t, "vol-ret-short", windowMs);
  const head = await writeSome(d, 60, 3);
  await eventually(() => releasedAt(d, "h-e1").coversAll(RangeSet.of(1, head)), "h-e1 releases everything once the window passed", 20_000, () => `h-e1 ${releasedAt(d, "h-e1")}`);
  for (const a of d.controller.releaseAudits().filter((x) => x.request.holder === "h-e1")) {
    for (const seq of [a.request.ranges.min!, a.request.ranges.max!]) {
      t.true(committedAt(a, seq) + windowMs <= a.state.asOfMs, `seq ${seq} released at ${a.state.asOfMs}, committed ${committedAt(a, seq)}`);
    }
  }
});
