/**
 * Holds on a real multi-region deployment (supercluster, JetStream control log): a PITR pin placed
 * with the CLI keeps ranges at a holder that the contract alone releases, and a registered recovery
 * keeps what it reads at its sources until it ends — or, when it dies, until its lease runs out.
 */
import anyTest, { type TestFn } from "ava";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerRecovery } from "../../actors/repair/recovery-registration.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { runCliCaptured } from "../../cli/program.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, type Deployment } from "./deployment.ts";
import { blockData, eventually, tempDir } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

/** One `custody` command line, run in this process: its exit code and output. */
const cli = (args: string[]) => runCliCaptured(args);

async function writeSome(d: Deployment, n: number, seed: number): Promise<void> {
  for (let i = 0; i < n; i++) await d.writer.write((seed * 37 + i * 11) % BLOCKS, blockData(seed * 1000 + i));
}

/** What the controller has committed as released at `holder` (all of its audits). */
function releasedAt(d: Deployment, holder: string): RangeSet {
  let r = RangeSet.EMPTY;
  for (const a of d.controller.releaseAudits()) if (a.request.holder === holder) r = r.union(a.request.ranges);
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
  t.true(d.holders.get("h-e1")!.holder.lane("vol-pin", LANE)!.retained.coversAll(RangeSet.of(1, 30)));
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
  await eventually(() => d.controller.counters.get("hold_expired.recovery") === 1, "the controller ended the overdue hold", 15_000);
  t.deepEqual(Object.keys(d.controller.controlState().holds), []);
});


test.serial("a `custody recover` in flight blocks the release of what it reads until it finishes", async (t) => {
  // h-w (the AZ scenario's contributor at its destination) runs as its own process and may release.
  // h-w is stopped from before the recovery starts until after the releases below; under load the
  // recovery process can take longer than the deployment's 10 s staleness to register, and a stale
  // h-w rightly stops h-e2 from releasing. Its receipts stay fresh for a minute here.
  const d = await deploy(t.context.supercluster, "vol-clirec", "use-clirec", { releasable: ["h-e1", "h-e2", "h-w"], processes: ["h-w"], topology: (topo) => ({ ...topo, staleAfterMs: 60_000 }) });
  t.context.defer(() => d.stop());
  // h-w is a `custody run holder` process (so the test can stop and continue it).
  const hw = d.processes.get("h-w")!.child;
  const conn = ["--server", d.urls["us-east"]!, "--region", "use-clirec"];
  // A pin keeps the first writes everywhere until the recovery has registered; then only the recovery holds them.
  t.is((await cli(["hold", "pin", ...conn, "--volume", d.volume, "--lane", LANE, "--ranges", "1-1000000", "--id", "pin-first"])).code, 0);
  await writeSome(d, 40, 7);
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  const scenario = "AZ use1-az1 lost";
  const sc = () => d.controller.status()?.scenarios.find((s) => s.name === scenario);
  await eventually(() => sc()?.contributors.includes("h-w") === true && (sc()?.cut?.[0]?.[1] ?? 0) >= head, "h-w contributes the AZ scenario's cut", 10_000, () => JSON.stringify(sc()));

  // The recovery's source is slow: h-w is stopped, so the read waits (it is answered once h-w continues).
  hw.kill("SIGSTOP");
  d.authority.authorize(d.volume, "cli-recovery");
  const keyFile = join(tempDir(), "data.key");
  writeFileSync(keyFile, Buffer.from(d.authority.dataKey(d.volume, "cli-recovery")).toString("hex"));
  const dir = join(tempDir("custody-clirec-"), "vol");
  const recovery = cli(["recover", "--volume", d.volume, "--scenario", scenario, "--to", "s-usw", "--dir", dir, "--blocks", String(BLOCKS), "--key-file", keyFile, "--controller-config", d.controllerConfigFile, ...conn, "--timeout", "120000", "--json"]);
  await eventually(() => Object.values(d.controller.controlState().holds).some((h) => h.kind === "recovery"), "the recovery registered its read", 20_000);
  t.is((await cli(["hold", "end", ...conn, "--id", "pin-first"])).code, 0);
  // Releases go on meanwhile: the other RAM tiers let the first writes go ...
  await eventually(() => releasedAt(d, "h-e2").intersects(RangeSet.of(1, head)), "h-e2 releases once the pin ended", 15_000);
  const rounds = d.controller.counters.get("evaluations");
  await eventually(() => d.controller.counters.get("evaluations") >= rounds + 20, "more evaluation rounds", 15_000);
  // ... while h-w, which the recovery reads, keeps them.
  t.false(releasedAt(d, "h-w").intersects(RangeSet.of(1, head)), `h-w released ${releasedAt(d, "h-w")} while the recovery read it`);

  hw.kill("SIGCONT");
  const done = await recovery;
  t.is(done.code, 0, done.stderr);
  const out = JSON.parse(done.stdout.trim().split("\n").at(-1)!) as { predicted: unknown; recovered: unknown };
  t.deepEqual(out.recovered, out.predicted);
  await eventually(() => releasedAt(d, "h-w").intersects(RangeSet.of(1, head)), "h-w releases what the recovery read once it finished", 15_000);

  // The control log's order: no release of what the recovery read while it stood, one after.
  const log = await (await openJetStreamControlLog(d.writer.transport.connection, { region: "use-clirec" })).readAll();
  const placed = log.find((e) => e.event.type === "hold_ranges" && e.event.kind === "recovery")!;
  const held = placed.event.type === "hold_ranges" ? placed.event : undefined;
  t.deepEqual(held?.holders, ["h-w"]);
  const ended = log.find((e) => e.event.type === "end_hold" && e.event.holdId === held!.holdId)!;
  t.truthy(ended, "the recovery ended its own hold");
  const pinEnded = log.find((e) => e.event.type === "end_hold" && e.event.holdId === "pin-first")!;
  t.true(placed.seq < pinEnded.seq && pinEnded.seq < ended.seq, "the pin ended while the recovery was in flight");
  const releasesOfRead = log.filter((e) => e.event.type === "release_ranges" && e.event.holderId === "h-w" && e.event.ranges.intersects(held!.ranges));
  t.true(releasesOfRead.length > 0);
  for (const r of releasesOfRead) t.true(r.seq > ended.seq, `release at seq ${r.seq} while the recovery (seqs ${placed.seq}-${ended.seq}) read`);
});
