import test from "ava";
import fc from "fast-check";
import { join } from "node:path";
import { coveredByAtLeast, protectedSeqs } from "../../actors/writer/protection.ts";
import { openPayload, PayloadDecryptError, sealPayload } from "../../transport/protocol/wire/unit-payload.ts";
import { checkWriterConfig, WriterConfigError } from "../../actors/writer/writer-config.ts";
import { repairEstimate } from "../../actors/repair/repair-estimate.ts";
import { recoverVolume, RecoveryGapError } from "../../actors/repair/volume-recovery.ts";
import { buildEvaluationState, releaseCandidates } from "../../actors/controller/evaluation-input.ts";
import { statusDocument } from "../../actors/controller/status-document.ts";
import { KeyAccessDeniedError, KeyAuthority, KeyAuthorityUnavailableError } from "../../custody/key-authority.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { makeTransportUnit, UnitDigestError } from "../../lanes/transport-unit.ts";
import { evaluateState } from "../../policies/evaluate.ts";
import { blockData, readVolume, site, tempDir } from "./e2e-fixture.ts";
import { topologyFor } from "./deployment.ts";

const KEY = new Uint8Array(32).fill(9);
const id = { volume: "v", lane: "l0", term: 1, firstSeq: 1, lastSeq: 2 };
const recs = [
  { seq: 1, lsn: 5, lba: 3, data: blockData(1) },
  { seq: 2, lsn: 6, lba: 4, data: blockData(2) },
];

test("a payload opens only under its key and its own unit identity", (t) => {
  const sealed = sealPayload(KEY, id, recs);
  t.deepEqual(openPayload(KEY, id, sealed), recs);
  t.throws(() => openPayload(new Uint8Array(32).fill(1), id, sealed), { instanceOf: PayloadDecryptError });
  t.throws(() => openPayload(KEY, { ...id, term: 2 }, sealed), { instanceOf: PayloadDecryptError });
  const flipped = new Uint8Array(sealed);
  flipped[40]! ^= 1;
  t.throws(() => openPayload(KEY, id, flipped), { instanceOf: PayloadDecryptError });
});

test("the key authority hands a volume's key only to authorized principals, and nothing once lost", (t) => {
  const ka = new KeyAuthority("ka", "s-eu");
  ka.authorize("v", "writer");
  const k = ka.dataKey("v", "writer");
  t.is(k.length, 32);
  t.deepEqual(ka.dataKey("v", "writer"), k, "one key per volume");
  t.throws(() => ka.dataKey("v", "holder-1"), { instanceOf: KeyAccessDeniedError });
  ka.lose();
  t.throws(() => ka.dataKey("v", "writer"), { instanceOf: KeyAuthorityUnavailableError });
});

test("coveredByAtLeast(k) holds exactly the sequences at least k sets contain (property)", (t) => {
  const set = fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 8 })), { maxLength: 5 }).map((rs) => rs.reduce((a, [s, n]) => a.add(s, s + n), RangeSet.EMPTY));
  fc.assert(
    fc.property(fc.array(set, { maxLength: 5 }), fc.integer({ min: 1, max: 4 }), (sets, k) => {
      const got = coveredByAtLeast(sets, k);
      for (let s = 0; s <= 70; s++) {
        const n = sets.filter((x) => x.has(s)).length;
        if (got.has(s) !== n >= k) return false;
      }
      return true;
    }),
  );
  t.pass();
});

test("only holders whose sites survive the contract's losses count as protection", (t) => {
  const sites = { a: site("sa", "us-east", "az1"), b: site("sb", "us-east", "az2") };
  const proven = new Map([
    ["a", RangeSet.of(1, 10)],
    ["b", RangeSet.of(1, 4)],
  ]);
  t.is(protectedSeqs(proven, sites, { name: "az", losses: ["az:az1"] }).toString(), RangeSet.of(1, 4).toString());
  t.true(protectedSeqs(proven, sites, { name: "region", losses: ["region:us-east"] }).isEmpty);
  t.is(protectedSeqs(proven, sites, { name: "two", losses: [], copies: 2 }).toString(), RangeSet.of(1, 4).toString());
});

test("a writer config with overlapping lanes or a lane without holders is refused with a typed error", (t) => {
  const base = { writerId: "w", volume: "v", term: 1, contracts: [], holderSites: {}, topologyEpoch: 1, policyGeneration: 1 };
  t.throws(() => checkWriterConfig({ ...base, lanes: [{ lane: "a", fromLba: 0, toLba: 9, holders: ["h"] }, { lane: "b", fromLba: 9, toLba: 20, holders: ["h"] }] }), { instanceOf: WriterConfigError });
  t.throws(() => checkWriterConfig({ ...base, lanes: [{ lane: "a", fromLba: 0, toLba: 9, holders: [] }] }), { instanceOf: WriterConfigError });
});

test("the repair estimate is the memo's sum, with transfer = missing bytes / bandwidth", (t) => {
  const e = repairEstimate({ detectSec: 30, authorizeSec: 10, acquireCapacitySec: 60, persistSec: 20, validateSec: 30 }, 1_250_000_000, 125_000_000);
  t.is(e.transferSec, 10);
  t.is(e.totalSec, 160);
  t.is(repairEstimate({ detectSec: 1, authorizeSec: 0, acquireCapacitySec: 0, persistSec: 0, validateSec: 0 }, 10, 0).totalSec, Infinity);
});

function unitsFor(records: { seq: number; lsn: number; lba: number; data: Uint8Array }[], lane = "l0") {
  return records.map((r) => {
    const uid = { volume: "v", lane, term: 1, firstSeq: r.seq, lastSeq: r.seq };
    return makeTransportUnit({ ...uid, commitTs: [1], payload: sealPayload(KEY, uid, [r]) });
  });
}

test("recovery refuses a tampered unit and a gap below the requested cut, and writes nothing then", async (t) => {
  const units = unitsFor([{ seq: 1, lsn: 1, lba: 0, data: blockData(1) }, { seq: 2, lsn: 2, lba: 1, data: blockData(2) }]);
  const bad = { ...units[1]!, payload: new Uint8Array(units[1]!.payload) };
  bad.payload[0]! ^= 1;
  const dir = join(tempDir(), "v");
  await t.throwsAsync(recoverVolume({ volume: "v", dir, blockCount: 8, lanes: ["l0"], dataKey: KEY, units: [units[0]!, bad] }), { instanceOf: UnitDigestError });
  await t.throwsAsync(recoverVolume({ volume: "v", dir, blockCount: 8, lanes: ["l0"], dataKey: KEY, units: [units[1]!], upTo: { l0: 2 } }), { instanceOf: RecoveryGapError });
  const { existsSync } = await import("node:fs");
  t.false(existsSync(dir), "nothing was created");
});

test("recovery across two lanes stops at the newest LSN every lane holds (consistent cut)", async (t) => {
  // lane a: lsn 1, 3; lane b: lsn 2, 4 — lane b lost its lsn-4 unit, so the cut is lsn 3.
  const a = unitsFor([{ seq: 1, lsn: 1, lba: 0, data: blockData(1) }, { seq: 2, lsn: 3, lba: 1, data: blockData(3) }], "a");
  const b = unitsFor([{ seq: 1, lsn: 2, lba: 4, data: blockData(2) }], "b");
  const dir = join(tempDir(), "v");
  const r = await recoverVolume({ volume: "v", dir, blockCount: 8, lanes: ["a", "b"], dataKey: KEY, units: [...a, ...b] });
  t.deepEqual(r.cut, { a: 1, b: 1 });
  t.is(r.lsn, 2);
  const got = await readVolume(dir, 8);
  t.deepEqual(got.subarray(4 * 4096, 5 * 4096), blockData(2));
  t.true(got.subarray(4096, 2 * 4096).every((x) => x === 0), "lsn 3 (after the consistent cut) is not applied");
});

test("the controller's evaluation input drops failed holders and release candidates need a successor", (t) => {
  const topo = topologyFor("v");
  const holding = (holderId: string, ranges: RangeSet) =>
    ({ holderId, incarnation: 1, volume: "v", lane: "l0", obligationId: "v-l0", representation: "raw", residency: "ram", evidence: { kind: "ram", capabilityGeneration: 0, observedAt: 100 }, retained: ranges, prefix: { base: 1, through: ranges.max ?? 0 }, receiptSeq: 1, issuedAt: 100, evidenceAt: 100, stale: false, survivesPowerLoss: false, receipt: { payload: { manifest: { baseSnapshots: [] } } } }) as never;
  const state = buildEvaluationState(topo, [holding("h-e1", RangeSet.of(1, 10)), holding("h-w", RangeSet.of(1, 6)), holding("h-e2", RangeSet.of(1, 10))], { heads: { l0: 10 }, commits: [{ lane: "l0", first: 1, last: 10, committedAtMs: 50, bytesPerSeq: 4096 }] }, 200, new Set(["h-e2"]));
  t.deepEqual(state.holders.find((h) => h.id === "h-e2")!.claims, []);
  const c = releaseCandidates(state, ["h-e1", "h-e2"]);
  t.deepEqual(c.map((x) => [x.holder, x.ranges.toString()]), [["h-e1", RangeSet.of(1, 6).toString()]]);
  const doc = statusDocument("ctl", 3, state, evaluateState(state), 0);
  const az = doc.scenarios.find((s) => s.name === "AZ use1-az1 lost")!;
  t.deepEqual(az.cut, [["l0", 6]], "only US-West's copy survives the writer's AZ");
  t.is(az.lostSeqs, 4);
  t.is(az.lostBytes, 4 * 4096);
  t.is(az.oldestLostAgeMs, 150);
});

test("a durable holder's copy is offered for release only where another disk copy or a base has it, never onto RAM copies (soak wedge)", (t) => {
  const topo = topologyFor("v");
  const holding = (holderId: string, ranges: RangeSet, residency: "ram" | "disk") =>
    ({ holderId, incarnation: 1, volume: "v", lane: "l0", obligationId: "v-l0", representation: "raw", residency, evidence: residency === "disk" ? { kind: "disk", offset: 0 } : { kind: "ram", capabilityGeneration: 0, observedAt: 100 }, retained: ranges, prefix: { base: 1, through: ranges.max ?? 0 }, receiptSeq: 1, issuedAt: 100, evidenceAt: 100, stale: false, survivesPowerLoss: residency === "disk", receipt: { payload: { manifest: { baseSnapshots: [] } } } }) as never;
  // The store (h-w) holds 1-6 on disk and 7-10 still in RAM; two RAM holders hold 1-10.
  const state = buildEvaluationState(
    topo,
    [holding("h-e1", RangeSet.of(1, 10), "ram"), holding("h-e2", RangeSet.of(1, 10), "ram"), holding("h-w", RangeSet.of(1, 6), "disk"), holding("h-w", RangeSet.of(7, 10), "ram")],
    { heads: { l0: 10 }, commits: [{ lane: "l0", first: 1, last: 10, committedAtMs: 50, bytesPerSeq: 4096 }] },
    200,
    new Set(),
  );
  const c = releaseCandidates(state, ["h-e1", "h-e2", "h-w"]);
  t.deepEqual(
    c.map((x) => [x.holder, x.ranges.toString()]),
    [
      ["h-e1", "1-6"],
      ["h-e1", "7-10"],
      ["h-e2", "1-6"],
      ["h-e2", "7-10"],
    ],
    "the store is not offered 1-10 (only RAM copies would be left); RAM holders get what is on disk elsewhere and what is only in RAM as separate requests",
  );
  // Remembered as durable even when its current claims are all RAM (just restarted, nothing flushed yet).
  const ramOnly = buildEvaluationState(topo, [holding("h-e1", RangeSet.of(1, 10), "ram"), holding("h-w", RangeSet.of(1, 10), "ram")], { heads: { l0: 10 }, commits: [{ lane: "l0", first: 1, last: 10, committedAtMs: 50, bytesPerSeq: 4096 }] }, 200, new Set());
  t.deepEqual(releaseCandidates(ramOnly, ["h-w"], new Set(["h-w"])), []);
  t.is(releaseCandidates(ramOnly, ["h-w"]).length, 1, "a holder never seen persisting is an ordinary RAM holder");
});

test("recovery applies records in batches the volume group-commits, and the newest write of an LBA still wins", async (t) => {
  // 600 records over 8 LBAs: many writes to the same block land in one batch.
  const recs = Array.from({ length: 600 }, (_, i) => ({ seq: i + 1, lsn: i + 1, lba: i % 8, data: blockData(i + 1) }));
  const units = unitsFor(recs, "l0");
  const dir = join(tempDir(), "v");
  const r = await recoverVolume({ volume: "v", dir, blockCount: 8, lanes: ["l0"], dataKey: KEY, units });
  t.is(r.cut["l0"], 600);
  const got = await readVolume(dir, 8);
  for (let lba = 0; lba < 8; lba++) t.deepEqual(got.subarray(lba * 4096, (lba + 1) * 4096), blockData(593 + lba), `LBA ${lba} holds its newest write`);
});
