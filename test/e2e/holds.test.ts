/**
 * Holds on a real multi-region deployment (supercluster, JetStream control log): a PITR pin placed
 * with the CLI keeps ranges at a holder that the contract alone releases, and a registered recovery
 * keeps what it reads at its sources until it ends — or, when it dies, until its lease runs out.
 */
import anyTest, { type TestFn } from "ava";
import { spawn } from "node:child_process";
import { registerRecovery } from "../../actors/repair/recovery-registration.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { withSupercluster, type SuperclusterTestContext } from "../helpers/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, type Deployment } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += String(d)));
    p.stderr.on("data", (d) => (stderr += String(d)));
    p.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

async function writeSome(d: Deployment, n: number, seed: number): Promise<void> {
  for (let i = 0; i < n; i++) await d.writer.write((seed * 37 + i * 11) % BLOCKS, blockData(seed * 1000 + i));
}

/** What the controller has committed as released at `holder` (all of its audits). */
function releasedAt(d: Deployment, holder: string): RangeSet {
  let r = RangeSet.EMPTY;
  for (const a of d.controller.core.audits) if (a.request.holder === holder) r = r.union(a.request.ranges);
  return r;
}

test.serial("a PITR pin placed with `custody hold pin` keeps ranges at the pinned holder that the contract alone releases; `custody hold end` lets them go", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-pin", "use-pin");
  t.context.defer(() => d.stop());
  const conn = ["--server", d.urls["us-east"]!, "--region", "use-pin"];
  const pinned = await cli(["hold", "pin", ...conn, "--volume", "vol-pin", "--lane", LANE, "--ranges", "1-30", "--holders", "h-e1", "--id", "pin-a", "--json"]);
  t.is(pinned.code, 0, pinned.stderr);
  t.like(JSON.parse(pinned.stdout), { holdId: "pin-a", kind: "pitr_pin", ranges: "1-30", holders: ["h-e1"] });

  await writeSome(d, 60, 3);
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  // The contract alone releases the RAM tiers' copies: h-e2 lets 1-30 go ...
  await eventually(() => releasedAt(d, "h-e2").intersects(RangeSet.of(1, 30)) && !releasedAt(d, "h-e1").isEmpty, "releases at both RAM tiers", 10_000, () => `h-e1 ${releasedAt(d, "h-e1")} h-e2 ${releasedAt(d, "h-e2")}`);
  // ... while h-e1 releases only what the pin does not hold, and keeps 1-30.
  t.false(releasedAt(d, "h-e1").intersects(RangeSet.of(1, 30)), `h-e1 released ${releasedAt(d, "h-e1")}`);
  t.true(d.holders.get("h-e1")!.holder.core.lanes.get(`vol-pin/${LANE}`)!.obligations.retained.coversAll(RangeSet.of(1, 30)));
  const listed = await cli(["hold", "list", ...conn, "--json"]);
  t.is(JSON.parse(listed.stdout).holds.length, 1);

  const ended = await cli(["hold", "end", ...conn, "--id", "pin-a", "--json"]);
  t.is(ended.code, 0, ended.stderr);
  await writeSome(d, 5, 4);
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  await eventually(() => releasedAt(d, "h-e1").intersects(RangeSet.of(1, 30)), "h-e1 releases the formerly pinned ranges", 10_000);
  const again = await cli(["hold", "end", ...conn, "--id", "pin-a", "--json"]);
  t.is(again.code, 1, "ending it twice is refused");
  t.regex(again.stderr, /unknown_hold/);
});

test.serial("a registered recovery keeps what it reads at its sources until it ends; a recovery that dies is ended by the controller at its lease", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-rec", "use-rec");
  t.context.defer(() => d.stop());
  const reading = await registerRecovery(d.urls["us-east"]!, "use-rec", { volume: "vol-rec", cut: { [LANE]: 20 }, sources: ["h-e1", "h-e2"], leaseMs: 120_000, by: "test recovery" });
  t.is(reading.holdIds.length, 1);
  await writeSome(d, 60, 5);
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  await eventually(() => !releasedAt(d, "h-e1").isEmpty && !releasedAt(d, "h-e2").isEmpty, "releases above what the recovery reads", 10_000);
  for (const h of ["h-e1", "h-e2"]) t.false(releasedAt(d, h).intersects(RangeSet.of(1, 20)), `${h} released ${releasedAt(d, h)} while the recovery read 1-20`);

  await reading.end();
  await writeSome(d, 5, 6);
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  await eventually(() => releasedAt(d, "h-e1").intersects(RangeSet.of(1, 20)), "released once the recovery ended", 10_000);

  // A recovery whose process dies never ends its hold: the controller ends it once its lease is over.
  const dead = await registerRecovery(d.urls["us-east"]!, "use-rec", { volume: "vol-rec", cut: { [LANE]: 70 }, sources: [], leaseMs: 1_500, by: "a recovery that dies" });
  t.context.defer(() => dead.end());
  t.is(dead.holdIds.length, 1);
  await eventually(() => d.controller.core.counters.get("hold_expired.recovery") === 1, "the controller ended the overdue hold", 15_000);
  t.deepEqual(Object.keys(d.controller.core.follower.state.holds), []);
});
