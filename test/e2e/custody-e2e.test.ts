import anyTest, { type TestFn } from "ava";
import { runRepair } from "../../actors/repair/repair.ts";
import { inProcessRepairPort } from "../../actors/controller/in-process-repair-port.ts";
import { authorizeReleases } from "../../policies/release.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { makeReceipt } from "../../custody/receipt.ts";
import { makeReceiptBatch, signReceiptBatch } from "../../custody/receipt-batch.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { receiptSubject } from "../../transport/protocol/subjects.ts";
import { encodeMessage } from "../../transport/protocol/wire/index.ts";
import { blockData, contentAt, e2eHolderConfig, eventually, launchWriter, readVolume, settle, tempDir } from "./e2e-fixture.ts";
import { AZ_CONTRACT, BLOCKS, deploy, FIRST_HOPS, HOLDERS, LANE, SITES, type Deployment } from "./deployment.ts";
import type { ChildProcess } from "node:child_process";
import { workloadWrite } from "../../actors/runtime/workload.ts";
import { ackLines, startWriterProcess } from "./role-processes.ts";
import { requestFailover } from "../../actors/controller/failover-client.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";

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
  for (const a of d.controller.releaseAudits()) {
    const upTo = a.grantedTogether.slice(0, a.grantedTogether.indexOf(a.request) + 1);
    const again = authorizeReleases(a.state, upTo);
    t.true(again.every((x) => x.allowed), `release ${a.request.holder} ${a.request.ranges.toString()} at control seq ${a.controlSeq} is one the policy engine grants`);
  }
  return d.controller.releaseAudits().length;
}

test.serial("a write acknowledged under 'survive loss of the writer's AZ' is recovered byte-exact at another site after that AZ's writer and holders die, via an automatic repair started by the declare-failure event and recovery", async (t) => {
  // The same-AZ holder keeps its custody (not releasable), so its loss leaves real coverage to repair.
  // The controller repairs on its own: standby h-e3 at s-e3, 1 Gbit/s assumed for the estimate.
  const d = await deploy(t.context.supercluster, "vol-az", "use-az", { releasable: ["h-e2"], repair: { standby: [{ holderId: "h-e3", site: "s-e3" }], bandwidthBytesPerSec: 125_000_000 } });
  t.context.defer(() => d.stop());
  await writeSome(d, 40, 1);
  const { heads } = await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  const acked = heads[LANE]!;
  t.true(d.writer.writer.protectedThrough(AZ_CONTRACT.name, LANE) >= acked);
  const writes = [...d.writer.writes];
  const ackedLsn = Math.max(...writes.map((w) => w.lsn));
  await eventually(() => (d.controller.status()?.acknowledged[0]?.[1] ?? 0) >= acked, "controller saw the writer's progress", 5000);
  t.deepEqual(d.controller.repairs(), [], "no failure declared, no repair");

  // The writer's AZ dies: the writer and its same-AZ holder. The test only declares the failure.
  await d.writer.close();
  await d.kill("h-e1");
  const { seq: failureSeq } = await d.declareFailure({ domain: "us-east/use1-az1" });

  await eventually(() => d.controller.repairs().some((r) => r.failureSeq === failureSeq && (r.state === "done" || r.state === "failed")), "the controller ran the repair", 15_000);
  const [rep] = d.controller.repairs();
  t.is(d.controller.repairs().length, 1, "exactly one repair for the one failure");
  t.like(rep, { failureSeq, state: "done", replacement: "h-e3", failed: ["h-e1"] });
  t.log(`repair of failure @${failureSeq}: ${rep!.copiedBytes} B in ${rep!.measuredMs} ms; policy estimate ${rep!.estimateMs} ms`);
  t.true((rep!.copiedBytes ?? 0) > 0);
  t.true(rep!.estimateMs !== null && rep!.estimateMs !== undefined && rep!.measuredMs !== undefined && rep!.measuredMs < rep!.estimateMs, "measured repair time is within the policy estimate");
  const e3 = d.holders.get("h-e3")!.holder.lane(d.volume, LANE)!;
  const o = d.controller.controlState().obligations[`${d.volume}-${LANE}`]!;
  const missing = o.responsible["h-e3"] ?? RangeSet.EMPTY;
  t.false(missing.isEmpty, "the replacement took over the failed holder's responsibility in the control log");
  t.true(e3.log.retained.coversAll(missing), "and holds every range it is now responsible for");
  await eventually(() => d.controller.status()?.repairs?.some((r) => r.failureSeq === failureSeq && r.state === "done") ?? false, "the status document reports the repair", 5000);

  // A restarted controller replays the log: the completed repair is not started again.
  const again = await d.restartController();
  again.evaluateSoon();
  await eventually(() => (again.counters.get("evaluations") ?? 0) >= 2, "the restarted controller evaluated", 5000);
  t.deepEqual(again.repairs(), [], "a repaired failure is not repaired twice");
  t.is(again.counters.get("repair_started") ?? 0, 0);

  // Recovery at US-West from what survives (the writer's AZ is gone).
  const { dir, result } = await d.recover("s-usw", d.survivors());
  t.true(result.cut[LANE]! >= acked, `recovered cut ${result.cut[LANE]} includes the acknowledged ${acked}`);
  const got = await readVolume(dir, BLOCKS);
  t.true(Buffer.from(got).equals(Buffer.from(contentAt(writes, BLOCKS, result.lsn))), "byte-exact at the recovered cut");
  t.true(result.lsn >= ackedLsn);
  t.true(checkReleases(t, d) >= 0);
});

test.serial("East fails, forwarding continues, West fails during replay: the waypoint plus Europe's base recover exactly the cut the policy engine predicted before the failures", async (t) => {
  // The failures strike before coverage repair would act on the prediction's gap: it would copy the
  // East/West-only suffix straight to Europe (recovering more than predicted, e.g. 374 for 363),
  // which is the network healing, not the prediction being wrong. This test is about the prediction.
  const d = await deploy(t.context.supercluster, "vol-ew", "use-ew", { coverageRepair: { graceMs: 600_000 } });
  t.context.defer(() => d.stop());
  const eu = () => d.controller.holdings({ holderId: "h-eu", lane: LANE }).reduce((a, h) => a.union(h.retained), RangeSet.EMPTY);

  // Phase 1, then Europe materializes a base at cut c0 from its own WAL copy.
  await writeSome(d, 30, 2);
  const c0 = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  await eventually(() => eu().covers(1, c0), "Europe receipted phase 1", 5000);
  const euSource = d.survivors().find((s) => s.holderId === "h-eu")!;
  const base = await d.recover("s-eu", [euSource], { upTo: { [LANE]: c0 } });
  d.controller.addBase({ id: "base-eu-c0", holder: "h-eu", cut: { [LANE]: c0 }, bytes: c0 * 4096 });

  // Phase 2 reaches everyone. Then the waypoint stops granting credit (drains): phase 3 outruns its
  // outstanding credit, so the independent path ends before the head — the interesting case.
  await writeSome(d, 30, 3);
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  d.holders.get("h-nj")!.holder.drain();
  await writeSome(d, 400, 4);
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  const writes = [...d.writer.writes];
  const njLane = d.holders.get("h-nj")!.holder.lane(d.volume, LANE)!;
  await eventually(() => (d.controller.status()?.acknowledged[0]?.[1] ?? 0) >= head, "controller saw the head", 5000);
  let seen = "";
  let since = Date.now();
  await eventually(() => {
    const now = njLane.log.received.toString();
    if (now !== seen) [seen, since] = [now, Date.now()];
    return Date.now() - since > 300 && eu().coversAll(njLane.log.retained);
  }, "the waypoint stopped receiving and Europe caught up with it", 10_000);
  d.controller.evaluateSoon();
  const before = d.controller.status()!.asOfMs;
  await eventually(() => d.controller.status()!.asOfMs > before, "a fresh evaluation", 5000);
  const status = d.controller.status()!;
  const predicted = status.scenarios.find((s) => s.name === "US-East and US-West lost")!;
  const timeline = status.scenarios.find((s) => s.kind === "timeline")!;
  t.log(`predicted before failures: scenario ${JSON.stringify(predicted.cut)} via ${predicted.contributors.join(",")}; timeline ${JSON.stringify(timeline.cut)}`);
  t.truthy(predicted.cut);
  t.true(predicted.cut![0]![1] < head, `the prediction (${predicted.cut![0]![1]}) is below the head ${head}: the East/West-only suffix is lost`);
  t.deepEqual(timeline.cut, predicted.cut, "the timeline (West fails 60 s into the replay) predicts the same cut");

  // East fails (writer and both East holders); forwarding from the waypoint to Europe goes on.
  await d.writer.close();
  await d.kill("h-e1");
  await d.kill("h-e2");
  const nj = d.holders.get("h-nj")!.holder.lane(d.volume, LANE)!;
  await eventually(() => eu().coversAll(nj.log.retained), "Europe holds everything the waypoint holds", 5000);

  // Replay starts from US-West, which fails half way through: its partial reads are abandoned.
  const west = d.survivors().find((s) => s.holderId === "h-w")!;
  const partial = west.units(d.volume, LANE, RangeSet.of(1, Math.floor(head / 2)));
  t.true(partial.length > 0);
  await d.kill("h-w");

  const sources = d.survivors().filter((s) => s.holderId === "h-nj" || s.holderId === "h-eu");
  const { dir, result } = await d.recover("s-eu", sources, { base: { dir: base.dir, cut: { [LANE]: c0 } } });
  t.deepEqual(Object.entries(result.cut), predicted.cut, "recovered cut equals the prediction");
  t.true(result.baseUsed);
  const got = await readVolume(dir, BLOCKS);
  t.true(Buffer.from(got).equals(Buffer.from(contentAt(writes, BLOCKS, result.lsn))), "byte-exact at the recovered cut");
  checkReleases(t, d);
});

test.serial("a stale writer that keeps sending after failover has every unit rejected and overwrites nothing of the new history", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-stale", "use-st");
  t.context.defer(() => d.stop());
  await writeSome(d, 10, 4);
  const cut = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;

  // Failover: the new history's relation to the recovered cut goes into the control log.
  // Say recovery chose a cut 3 below the old head: the new term still starts above every old-term
  // sequence any holder receipted, so old and new units can never share a sequence.
  await eventually(() => d.controller.holdings({ volume: d.volume, lane: LANE, holderId: "h-w" }).some((h) => h.retained.has(cut)), "controller has the receipts", 5000);
  // The failover is asked of the controller over NATS, as a new writer or the operator would.
  const plan = await requestFailover(d.writer.transport, d.volume, { lanes: [LANE], term: 2, recoveredCut: { [LANE]: cut - 3 } });
  t.is(plan.firstSeq[LANE], cut + 1, "sequences between the recovered cut and the old head are abandoned");
  const recorded = d.controller.controlState().obligations[`${d.volume}-${LANE}-term2`]!;
  t.true(recorded.responsible["h-w"]!.has(cut + 1), "the control log records where term 2 starts");
  const w2 = await launchWriter({
    url: d.urls["us-east"]!,
    writerId: "w2",
    volume: d.volume,
    term: 2,
    blockCount: BLOCKS,
    lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: FIRST_HOPS, firstSeq: plan.firstSeq[LANE]! }],
    contracts: [AZ_CONTRACT],
    sites: d.writer.writer.config.holderSites,
    keys: d.keys,
    authority: d.authority,
  });
  t.context.defer(() => w2.close());
  for (let i = 0; i < 5; i++) await w2.write(i, blockData(9000 + i));
  await w2.writer.sync(AZ_CONTRACT.name, 10_000);

  // The old writer never learned it was fenced and keeps writing.
  const sentBefore = d.writer.units.length;
  for (let i = 0; i < 5; i++) await d.writer.write(i, blockData(7000 + i));
  await d.writer.writer.sync();
  const staleUnits = d.writer.units.length - sentBefore;
  t.true(staleUnits > 0);
  for (const h of FIRST_HOPS) await eventually(() => d.holders.get(h)!.holder.counters.get("stale_term") >= staleUnits, `${h} refused every stale unit`, 5000);
  await settle(100);
  const newDigests = new Map(w2.units.map((u) => [u.firstSeq, Buffer.from(u.digest).toString("hex")]));
  for (const h of FIRST_HOPS) {
    const held = d.survivors().find((s) => s.holderId === h)!.units(d.volume, LANE, RangeSet.of(cut + 1, cut + 100));
    // RAM tiers may already have released the new history (the controller runs); the others keep it.
    if (h === "h-nj" || h === "h-w") t.true(held.length > 0, `${h} retains the new history`);
    for (const u of held) t.is<string | undefined, string | undefined>(Buffer.from(u.digest).toString("hex"), newDigests.get(u.firstSeq), `${h} seq ${u.firstSeq} is the new history's unit`);
    t.is(d.holders.get(h)!.holder.counters.get("stale_term"), staleUnits, `${h} counted each stale unit once`);
  }
  const err = await t.throwsAsync(d.writer.writer.sync(AZ_CONTRACT.name, 300));
  t.is((err as { code?: string }).code, "protection_timeout", "the stale writer can never prove protection again");
  t.is(d.writer.writer.newestTerm(), 2, "receipts told the stale writer a newer term exists");
});

test.serial("the controller commits releases, holders recycle them, and every committed release is one the policy engine grants on re-evaluation", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-rel", "use-rel");
  t.context.defer(() => d.stop());
  const started = Date.now();
  const evals0 = d.controller.counters.get("evaluations");
  const batches0 = d.controller.counters.get("receipt_batches");
  await writeSome(d, 60, 5);
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  await eventually(() => d.controller.releaseAudits().length > 0, "a release was committed", 5000);
  await eventually(() => ["h-e1", "h-e2"].some((h) => d.holders.get(h)!.log.some((o) => o.type === "released")), "a RAM holder recycled released ranges", 5000);
  const n = checkReleases(t, d);
  t.true(n > 0);
  for (const a of d.controller.releaseAudits()) t.true(["h-e1", "h-e2"].includes(a.request.holder), "only RAM tiers shed custody");
  const c = d.controller.counters;
  const evals = c.get("evaluations") - evals0;
  const batches = c.get("receipt_batches") - batches0;
  t.log(`${n} releases committed; ${c.get("release_denied")} candidates refused; ${evals} evaluations for ${batches} receipt batches in ${Date.now() - started} ms`);
  // Evaluation is batched and rate-bounded (one per 50 ms interval at most), never per receipt.
  t.true(evals <= Math.ceil((Date.now() - started) / 50) + 2);
  t.true(batches > evals);
  const status = d.controller.status()!;
  t.is(status.scenarios.length, 4);
  t.true(status.scenarios.filter((s) => s.required).every((s) => s.cut !== null && s.meetsDeadline));
});

test.serial("a forged receipt batch is refused by the controller and the writer, counted, and proves nothing", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-forge", "use-fg");
  t.context.defer(() => d.stop());
  await d.writer.write(0, blockData(1));
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  const wRetained = () => d.controller.holdings({ holderId: "h-w" }).reduce((a, h) => a.union(h.retained), RangeSet.EMPTY);
  await eventually(() => wRetained().has(1), "the controller has US-West's genuine receipt", 5000);
  const subject = receiptSubject(d.volume, LANE);
  const receipt = makeReceipt({
    holder: { holderId: "h-w", incarnation: 1 },
    volume: d.volume,
    lane: LANE,
    issuedAt: Date.now(),
    writerTerm: 1,
    topologyEpoch: 1,
    policyGeneration: 1,
    prefixBase: 1,
    payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    obligation: { obligationId: `${d.volume}-${LANE}`, releaseAuthority: { kind: "control_log", region: "us-west" } },
    extensions: [],
    receiptSeq: 999_999,
    retained: RangeSet.of(1, 10_000),
    residency: { kind: "ram", capabilityGeneration: 0, observedAt: Date.now() },
  });
  const batch = makeReceiptBatch({ volume: d.volume, lane: LANE, subject }, { holderId: "h-w", incarnation: 1 }, Date.now(), [receipt]);
  const forged = signReceiptBatch(batch, generateHolderKeyPair().privateKey);
  d.writer.transport.publish(subject, encodeMessage(receiptBatchSpec, { body: forged.body, signature: forged.signature }));
  await eventually(() => d.controller.counters.get("receipt_bad_signature") >= 1 && d.writer.writer.counters.get("receipt_bad_signature") >= 1, "both refused the forgery", 5000);
  t.is(wRetained().max, 1, "the forged claim on 1..10000 never entered the ledger");
  t.true(d.writer.writer.protectedThrough(AZ_CONTRACT.name, LANE) < 10_000);
});

function killed(child: ChildProcess): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.signalCode);
    child.on("exit", (_code, signal) => resolve(signal));
    child.kill("SIGKILL");
  });
}

test.serial("SIGKILL of the writer's AZ (writer and same-AZ holder processes) loses no write acknowledged under the AZ contract: repair and recovery rebuild it byte-exact elsewhere", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-kill", "use-kill", { releasable: ["h-e2"], processes: ["h-e1"] });
  t.context.defer(() => d.stop());
  const holderSites = Object.fromEntries(Object.entries(HOLDERS).map(([h, [s]]) => [h, SITES[s]!]));
  // h-e1 and the writer w2 are `custody run` processes; they take their peers' keys from the control log.
  const e1 = d.processes.get("h-e1")!.child;
  d.authority.authorize(d.volume, "w2");
  // Forty writes (write i holds workloadWrite(i)), acknowledged once a sync under the AZ contract proved them protected.
  const bus = { url: d.urls["us-east"]!, controlRegion: d.controlRegion };
  const w = await startWriterProcess(bus, { writerId: "w2", volume: d.volume, lane: LANE, blockCount: BLOCKS, holders: FIRST_HOPS, contract: AZ_CONTRACT, holderSites, dataKey: d.authority.dataKey(d.volume, "w2"), count: 40 });
  t.context.defer(() => w.process.signal("SIGKILL", 10_000));
  await eventually(() => ackLines(w.ackLog).length >= 40 || !w.process.running, "the writer process logged its acknowledged writes", 60_000, () => w.process.log);
  const acked = ackLines(w.ackLog);
  const head = Math.max(...acked.map((a) => a.seq));
  t.is(acked.length, 40, "every write was acknowledged under the AZ contract before the failure");
  const e1Retained = () => d.controller.holdings({ holderId: "h-e1" }).reduce((a, h) => a.union(h.retained), RangeSet.EMPTY);
  await eventually(() => e1Retained().covers(1, head), "the same-AZ holder process receipted everything", 5000);

  t.is(await killed(w.process.child), "SIGKILL");
  t.is(await killed(e1), "SIGKILL");
  const { seq: failureSeq } = await d.declareFailure({ domain: "us-east/use1-az1" });
  // This controller has no repair section: it reports the failure instead of repairing it.
  await eventually(() => d.controller.status()?.repairs?.some((r) => r.failureSeq === failureSeq && r.state === "needed") ?? false, "the status document reports 'repair needed'", 5000);
  const replacement = await d.startReplacement("h-e3", "s-e3");
  const report = await runRepair({
    repairId: "repair-kill",
    volume: d.volume,
    lanes: [LANE],
    failed: ["h-e1"],
    replacement,
    port: d.controller.repairPort(),
    transport: d.holders.get("h-e2")!.transport,
    clock: { now: () => Date.now(), setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout) },
    repairBandwidthBytesPerSec: 125_000_000,
  });
  t.true(RangeSet.fromJSON(report.missing[LANE]!).covers(1, head), "everything the killed holder covered was repaired");
  t.log(`repair after SIGKILL: ${report.copiedUnits} units in ${report.measuredMs} ms (estimate ${report.estimate.totalSec.toFixed(1)} s)`);

  const { dir, result } = await d.recover("s-usw", d.survivors());
  t.is(result.cut[LANE], head);
  const model = acked.map((a) => ({ lsn: a.lsn, lba: a.lba, data: workloadWrite(a.i, 1, BLOCKS).data }));
  t.true(Buffer.from(await readVolume(dir, BLOCKS)).equals(Buffer.from(contentAt(model, BLOCKS, result.lsn))), "byte-exact");
});
