import test from "ava";
import fc from "fast-check";
import { RangeSet } from "../../lanes/range-set.ts";
import { LaneObligations, EdgeReceiptError } from "../../actors/hop/lane-obligations.ts";
import { dueLanes, nextDeadline, noteAdmitted, takeBatch } from "../../actors/holder/receipt-batches.ts";
import { NO_RECEIPT_BATCHES } from "../../actors/holder/holder-state.ts";
import { parseHolderConfig, HolderConfigError } from "../../actors/holder/holder-config.ts";
import { checkAllProtectedRam, evacuationFits, preservationTimeMs, protectedAdmissionLimit, protectionStatus } from "../../policies/protected-ram.ts";
import type { ProtectedRamEvidence } from "../../actors/holder/holder-config.ts";

const receipt = (holder: string, incarnation: number, receiptSeq: number, ranges: [number, number][], epoch = 0) => ({
  holder,
  incarnation,
  epoch,
  receiptSeq,
  retained: RangeSet.from(ranges),
});

test("a unit stays pinned for each edge until that edge's own receipt covers it", (t) => {
  const lane = new LaneObligations(["b", "c"]);
  lane.admit(1, 10);
  lane.applyEdgeReceipt(receipt("b", 1, 1, [[1, 10]]));
  t.true(lane.pendingFor("b").isEmpty);
  t.is(lane.pendingFor("c").toString(), "1-10");
  t.false(lane.forwardedToAll(RangeSet.of(1, 10)));
  lane.applyEdgeReceipt(receipt("c", 1, 1, [[1, 4]]));
  t.is(lane.pendingFor("c").toString(), "5-10");
});

test("release needs both a frontier and every edge's receipt", (t) => {
  const lane = new LaneObligations(["b"]);
  lane.admit(1, 10);
  lane.authorizeRelease(RangeSet.of(1, 10));
  t.true(lane.releasable().isEmpty, "frontier without edge receipt releases nothing");
  lane.applyEdgeReceipt(receipt("b", 1, 1, [[1, 6]]));
  t.is(lane.releasable().toString(), "1-6");
  t.false(lane.release(RangeSet.of(1, 10)));
  t.true(lane.release(RangeSet.of(1, 6)));
  t.is(lane.retained.toString(), "7-10");
  t.false(lane.admit(3, 3), "released sequences never reappear");
});

test("a stale-incarnation or stale-epoch receipt is refused and changes no pin", (t) => {
  const lane = new LaneObligations(["b"], 5);
  lane.admit(1, 10);
  lane.applyEdgeReceipt(receipt("b", 2, 1, [[1, 3]], 5));
  const stale = t.throws(() => lane.applyEdgeReceipt(receipt("b", 1, 9, [[1, 10]], 5)), { instanceOf: EdgeReceiptError });
  t.is(stale?.code, "stale_incarnation");
  const oldEpoch = t.throws(() => lane.applyEdgeReceipt(receipt("b", 2, 9, [[1, 10]], 4)), { instanceOf: EdgeReceiptError });
  t.is(oldEpoch?.code, "stale_epoch");
  const other = t.throws(() => lane.applyEdgeReceipt(receipt("x", 2, 9, [[1, 10]], 5)), { instanceOf: EdgeReceiptError });
  t.is(other?.code, "not_an_edge");
  t.is(lane.pendingFor("b").toString(), "4-10");
});

test("a newer edge incarnation re-pins everything it receipted before (its RAM is gone)", (t) => {
  const lane = new LaneObligations(["b"]);
  lane.admit(1, 10);
  lane.applyEdgeReceipt(receipt("b", 1, 1, [[1, 10]]));
  lane.applyEdgeReceipt(receipt("b", 2, 1, [[1, 2]]));
  t.is(lane.pendingFor("b").toString(), "3-10");
});

test("what the control log released at an edge is owed to it no more, across its restarts, even with no receipt of it", (t) => {
  const lane = new LaneObligations(["b"]);
  lane.admit(1, 10);
  lane.applyEdgeReceipt(receipt("b", 1, 1, [[8, 10]]));
  t.is(lane.holesAt("b").toString(), "1-7", "b's receipt of 1-7 was lost");
  t.true(lane.releasedAtEdge("b", RangeSet.of(1, 5)));
  t.false(lane.releasedAtEdge("b", RangeSet.of(2, 4)), "nothing new");
  t.false(lane.releasedAtEdge("x", RangeSet.of(1, 5)), "not an edge");
  t.is(lane.pendingFor("b").toString(), "6-7");
  t.is(lane.holesAt("b").toString(), "6-7");
  lane.authorizeRelease(RangeSet.of(1, 10));
  t.is(lane.releasable().toString(), "1-5,8-10");
  // b restarts: what it receipted counts no more, what the log released there still does.
  lane.restartEdge("b", 2);
  t.is(lane.pendingFor("b").toString(), "6-10");
  t.true(lane.forwardedToAll(RangeSet.of(1, 5)));
  t.false(lane.forwardedToAll(RangeSet.of(5, 6)));
});

test("property: any order or duplication of one incarnation's receipts leaves the same pins", (t) => {
  const rangeArb = fc.tuple(fc.nat(50), fc.nat(10)).map(([a, n]) => [a, a + n] as [number, number]);
  fc.assert(
    fc.property(fc.array(fc.array(rangeArb, { maxLength: 3 }), { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (batches, picks) => {
      const ordered = new LaneObligations(["b"]);
      const shuffled = new LaneObligations(["b"]);
      ordered.admit(0, 70);
      shuffled.admit(0, 70);
      batches.forEach((rs, i) => ordered.applyEdgeReceipt(receipt("b", 1, i, rs)));
      // Deliver every batch at least once, in a permuted order, plus duplicates.
      const order = batches.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = (picks[i] ?? 0) % (i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      for (const p of picks) if (batches.length > 0) order.push(p % batches.length);
      for (const i of order) shuffled.applyEdgeReceipt(receipt("b", 1, i, batches[i]!));
      return ordered.pendingFor("b").equals(shuffled.pendingFor("b"));
    }),
  );
  t.pass();
});

test("transfer out needs the neighbor's receipt to cover every transferred sequence", (t) => {
  const lane = new LaneObligations([]);
  lane.admit(1, 10);
  t.false(lane.transferOut(RangeSet.of(1, 10), RangeSet.of(1, 9)));
  t.is(lane.retained.toString(), "1-10");
  t.true(lane.transferOut(RangeSet.of(1, 10), RangeSet.of(1, 10)));
  t.true(lane.retained.isEmpty);
});

test("the persistence cut holds only ranges given as completed-sync evidence", (t) => {
  const lane = new LaneObligations([]);
  lane.admit(1, 10);
  t.true(lane.diskResident.isEmpty);
  lane.persisted(RangeSet.of(1, 4));
  t.is(lane.diskResident.toString(), "1-4");
});

test("a receipt batch is due when full or when its oldest unit has waited the max delay", (t) => {
  const policy = { maxUnits: 3, maxDelayMs: 10 };
  const link = { traceId: "t1", spanId: "s1", traceFlags: 1 };
  let r = noteAdmitted(NO_RECEIPT_BATCHES, policy, "v/l", 100, link);
  t.false(r.full);
  t.deepEqual(dueLanes(r.batches, policy, 105), []);
  t.is(nextDeadline(r.batches, policy), 110);
  t.deepEqual(dueLanes(r.batches, policy, 110), ["v/l"]);
  r = noteAdmitted(r.batches, policy, "v/l", 111);
  r = noteAdmitted(r.batches, policy, "v/l", 112);
  t.true(r.full, "third unit fills the batch");
  const taken = takeBatch(r.batches, "v/l");
  t.deepEqual(taken.taken, { units: 3, openedAt: 100, links: [link] });
  t.deepEqual(taken.batches.open, {}, "nothing pending");
  t.is(takeBatch(taken.batches, "v/l").taken, undefined);
});

const evidence: ProtectedRamEvidence = {
  protectedBytes: 64 << 20,
  batteryHealth: 0.95,
  holdUpMs: 1000,
  autonomousPreservation: true,
  drainBytesPerSec: 100 << 20,
  detectionMs: 10,
  persistenceCompletionMs: 50,
  marginMs: 40,
  measuredAt: 1_000,
  capabilityGeneration: 1,
};
const opts = { maxEvidenceAgeMs: 5_000, minBatteryHealth: 0.8 };

test("protected receipts are allowed only while detection + queued/drain + persist + margin < hold-up", (t) => {
  // slack = 1000 - 100 = 900 ms at 100 MiB/s -> 90 MiB, but capacity caps at 64 MiB.
  t.is(protectionStatus(evidence, 10 << 20, 2_000, opts), "ok");
  t.is(protectionStatus(evidence, 65 << 20, 2_000, opts), "capacity_exceeded");
  const slow = { ...evidence, drainBytesPerSec: 10 << 20 }; // 900 ms -> 9 MiB
  t.is(protectionStatus(slow, 9 << 20, 2_000, opts), "bound_exceeded");
  t.is(protectionStatus(slow, 8 << 20, 2_000, opts), "ok");
  t.true(preservationTimeMs(slow, protectedAdmissionLimit(slow)) < slow.holdUpMs);
  t.false(preservationTimeMs(slow, protectedAdmissionLimit(slow) + 2) < slow.holdUpMs);
});

test("a shared drain target: the holder counts on its even share, and admits exactly what the group check (custody admit) admits when every sharer queues its limit", (t) => {
  // Four hosts drain into one 40 MiB/s target: each may count on 10 MiB/s, not its own 100 MiB/s.
  const shared = { ...evidence, sharedDrain: { target: "nvme-shared", capacityBytesPerSec: 40 << 20, sharers: 4 } };
  t.is(protectionStatus(shared, 8 << 20, 2_000, opts), "ok");
  t.is(protectionStatus(shared, 9 << 20, 2_000, opts), "bound_exceeded", "900 ms at 10 MiB/s is 9 MiB, not 90");
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1 << 20, max: 200 << 20 }),
      fc.integer({ min: 1 << 20, max: 400 << 20 }),
      fc.integer({ min: 200, max: 5_000 }),
      (sharers, own, capacity, holdUpMs) => {
        const e = { ...evidence, protectedBytes: 2 ** 40, holdUpMs, drainBytesPerSec: own, sharedDrain: { target: "t", capacityBytesPerSec: capacity, sharers } };
        const limit = protectedAdmissionLimit(e);
        if (limit < 16) return true;
        const nodes = (queued: number) =>
          Array.from({ length: sharers }, (_, i) => ({
            id: `n${i}`,
            queuedProtectedBytes: queued,
            reservedDrainBytesPerSec: own,
            detectionSec: e.detectionMs / 1000,
            persistenceCompletionSec: e.persistenceCompletionMs / 1000,
            marginSec: e.marginMs / 1000,
            usableHoldUpSec: holdUpMs / 1000,
            drainTarget: "t",
            controller: `c${i}`,
            link: `l${i}`,
            powerSupply: `p${i}`,
          }));
        const caps = { targets: { t: capacity }, links: {} };
        const atLimit = checkAllProtectedRam(nodes(limit), caps).every((v) => v.admitted);
        const over = checkAllProtectedRam(nodes(limit + 8), caps).every((v) => !v.admitted);
        return atLimit && over && protectionStatus(e, limit + 8, 2_000, opts) === "bound_exceeded";
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});

test("stale evidence, a weak battery or no autonomous path stop protected receipts", (t) => {
  t.is(protectionStatus(evidence, 1, 7_000, opts), "stale_evidence");
  t.is(protectionStatus({ ...evidence, batteryHealth: 0.5 }, 1, 2_000, opts), "battery_degraded");
  t.is(protectionStatus({ ...evidence, autonomousPreservation: false }, 1, 2_000, opts), "no_autonomous_path");
});

test("an evacuation that cannot finish within the remaining hold-up time does not fit", (t) => {
  t.true(evacuationFits(10 << 20, 100 << 20, 200));
  t.false(evacuationFits(10 << 20, 100 << 20, 100));
  t.false(evacuationFits(1, 0, 1000));
});

test("holder config rejects a bad identifier and disk residency without a flush policy", (t) => {
  const base = {
    holderId: "h1",
    incarnation: 1,
    site: { region: "us-east", az: "a", host: "x" },
    residency: ["ram" as const],
    lanes: [{ volume: "v", lane: "l", upstream: ["w"] }],
    arena: { limitBytes: 1 << 22 },
    receipts: {},
  };
  t.is(parseHolderConfig(base).receipts.maxUnits, 64);
  const e1 = t.throws(() => parseHolderConfig({ ...base, holderId: "h.1" }), { instanceOf: HolderConfigError });
  t.is(e1?.detail["field"], "holderId");
  const e2 = t.throws(() => parseHolderConfig({ ...base, residency: ["disk"] }), { instanceOf: HolderConfigError });
  t.is(e2?.detail["field"], "flush");
});
