import test from "ava";
import { SimulatedClock } from "xstate";
import { Arena } from "../../arena/arena.ts";
import {
  ArenaFullError,
  CapacityLimitError,
  CreditExceededError,
  InvalidPinReasonError,
  SegmentFormatError,
  SegmentStateError,
  UnitTooLargeError,
} from "../../arena/errors.ts";
import { PinReason } from "../../arena/pin-reason.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { unit } from "./fixtures.ts";

const KiB = 1024;
// Small geometry: 8 KiB segments, units up to 1 KiB stored.
const small = { segmentBytes: 8 * KiB, maxUnitBytes: KiB, initialBytes: 64 * KiB, incrementBytes: 16 * KiB, hardLimitBytes: 128 * KiB, manifestReserveBytes: 8 * KiB, growthLowWaterBytes: 16 * KiB };
const rec = (payload: number, records = 1) => 32 + 8 * records + payload;

function arenaWithCredits(bytes = 40 * KiB) {
  const arena = new Arena(small, new SimulatedClock());
  arena.grant("v", "l0", bytes);
  return arena;
}

test("a unit that does not fit seals the open segment and opens a fresh one", (t) => {
  const arena = arenaWithCredits();
  const per = Math.floor((8 * KiB) / rec(960));
  let seq = 1;
  for (let i = 0; i < per; i++, seq++) t.false(arena.append(unit(seq, seq, 960)).opened && i > 0);
  const first = arena.openSegmentOf("v", "l0")!;
  const r = arena.append(unit(seq, seq, 960));
  t.true(r.opened);
  t.is(r.sealedFull, first);
  t.is(arena.describe(first).state, "sealed");
  t.is(arena.describe(first).unitCount, per);
  t.deepEqual(arena.units(first).map((u) => u.firstSeq), Array.from({ length: per }, (_, i) => i + 1));
});

test("stored units read back byte-identical", (t) => {
  const arena = arenaWithCredits();
  const u = unit(1, 3, 200);
  const { segmentId } = arena.append(u);
  const [back] = arena.units(segmentId);
  t.deepEqual(Buffer.from(back!.payload), Buffer.from(u.payload));
  t.deepEqual(Buffer.from(back!.digest), Buffer.from(u.digest));
  t.deepEqual(back!.commitTs, u.commitTs);
  t.is(back!.term, 1);
});

test("whole-segment recycling happens only after the last pin is released", (t) => {
  const arena = arenaWithCredits();
  const { segmentId } = arena.append(unit(1, 1, 500));
  arena.seal("v", "l0");
  arena.pin(segmentId, PinReason.in_flight_forward);
  arena.pin(segmentId, PinReason.pitr_pin);
  arena.pin(segmentId, PinReason.recovery_in_progress);
  const ram = arena.report().ramBytes;
  t.is(ram, 8 * KiB);
  t.deepEqual(arena.release("v", "l0", RangeSet.of(1)), [segmentId], "custody ends...");
  t.is(arena.report().ramBytes, ram, "...but three pins still hold the segment");
  t.false(arena.unpin(segmentId, PinReason.in_flight_forward));
  t.false(arena.unpin(segmentId, PinReason.pitr_pin));
  t.is(arena.report().ramBytes, ram);
  t.true(arena.unpin(segmentId, PinReason.recovery_in_progress), "the last pin recycles it");
  t.is(arena.report().ramBytes, 0);
  t.deepEqual(arena.segmentsOf("v", "l0"), []);
});

test("release reclaims only segments whose every sequence is released", (t) => {
  const arena = arenaWithCredits();
  const per = Math.floor((8 * KiB) / rec(960));
  for (let s = 1; s <= per * 2; s++) arena.append(unit(s, s, 960));
  arena.seal("v", "l0");
  const [a, b] = arena.segmentsOf("v", "l0");
  t.deepEqual(arena.release("v", "l0", RangeSet.of(1, per + 1)), [a!]);
  t.deepEqual(arena.segmentsOf("v", "l0"), [b!], "a partly released segment stays whole");
  t.deepEqual(arena.release("v", "l0", RangeSet.of(per + 2, per * 2)), [b!]);
  t.is(arena.report().ramBytes, 0);
});

test("an open segment whose ranges were released is recycled when it seals", (t) => {
  const arena = arenaWithCredits();
  arena.append(unit(1, 1, 100));
  t.deepEqual(arena.release("v", "l0", RangeSet.of(1, 10)), []);
  t.is(arena.report().ramBytes, 8 * KiB);
  arena.seal("v", "l0");
  t.is(arena.report().ramBytes, 0);
});

test("a unit above maxUnitBytes is refused with unit_too_large, counted, and changes nothing", (t) => {
  const arena = arenaWithCredits();
  const before = arena.report();
  const err = t.throws(() => arena.append(unit(1, 1, KiB)), { instanceOf: UnitTooLargeError });
  t.is(err?.code, "unit_too_large");
  t.is(arena.counters.get("unit_too_large"), 1);
  t.deepEqual(arena.report(), before);
});

test("a unit beyond the lane's credits is refused with credit_exceeded and changes nothing", (t) => {
  const arena = new Arena(small, new SimulatedClock());
  arena.grant("v", "l0", rec(100));
  arena.append(unit(1, 1, 100));
  const before = arena.report();
  t.throws(() => arena.append(unit(2, 2, 100)), { instanceOf: CreditExceededError });
  t.throws(() => arena.append(unit(1, 1, 100, "other")), { instanceOf: CreditExceededError });
  t.is(arena.counters.get("credit_exceeded"), 2);
  t.deepEqual(arena.report(), before);
});

test("bad pin requests get typed errors and are counted", (t) => {
  const arena = arenaWithCredits();
  const { segmentId } = arena.append(unit(1, 1, 100));
  t.throws(() => arena.pin(segmentId, "whim" as PinReason), { instanceOf: InvalidPinReasonError });
  t.throws(() => arena.unpin(segmentId, PinReason.pitr_pin), { instanceOf: SegmentStateError });
  t.throws(() => arena.pin(999, PinReason.pitr_pin), { code: "unknown_segment" });
  t.is(arena.counters.get("invalid_pin_reason") + arena.counters.get("segment_state") + arena.counters.get("unknown_segment"), 3);
});

test("credits are withheld at the limit of admitted capacity until the next increment is secured", (t) => {
  const arena = new Arena(small, new SimulatedClock());
  // 64 KiB admitted, 8 KiB manifest reserve: 7 segments, each guaranteed to absorb 7169 bytes.
  const first = arena.grant("v", "l0", 1_000_000);
  t.is(first, 7 * (8 * KiB - KiB + 1));
  t.is(arena.grant("v", "l1", 1000), 0, "nothing left to promise");
  t.true(arena.wantsIncrement(), "growth is asked for before space runs out");
  t.is(arena.secureIncrement(), 80 * KiB);
  t.is(arena.grant("v", "l1", 1000), 1000);
});

test("growth stops at the hard byte limit with capacity_limit", (t) => {
  const arena = new Arena(small, new SimulatedClock());
  for (let i = 0; i < 4; i++) arena.secureIncrement();
  t.is(arena.capacityBytes, 128 * KiB);
  t.false(arena.wantsIncrement());
  t.throws(() => arena.secureIncrement(), { instanceOf: CapacityLimitError });
});

test("a seal that would strand credited space is deferred, and proceeds once credits are used", (t) => {
  const arena = new Arena(small, new SimulatedClock());
  arena.grant("v", "l0", rec(100));
  arena.append(unit(1, 1, 100));
  const granted = arena.grant("v", "l0", 1_000_000);
  t.true(granted > 0);
  const r = arena.seal("v", "l0");
  t.true(r.deferred);
  t.is(arena.counters.get("seal_deferred"), 1);
  arena.revoke("v", "l0");
  t.false(arena.seal("v", "l0").deferred);
});

test("export then import transfers a sealed segment with every unit intact", (t) => {
  const src = arenaWithCredits();
  for (let s = 1; s <= 5; s++) src.append(unit(s, s, 300));
  const id = src.openSegmentOf("v", "l0")!;
  src.seal("v", "l0");
  const bytes = src.exportSegment(id);
  const dst = new Arena(small, new SimulatedClock());
  const imported = dst.importSegment(bytes);
  t.deepEqual(imported.seqs.toJSON(), [[1, 5]]);
  t.deepEqual(dst.units(imported.segmentId), src.units(id));
  t.is(dst.describe(imported.segmentId).pinsOf(PinReason.custody_obligation), 1);
});

test("a corrupted export is refused and the importing arena is unchanged", (t) => {
  const src = arenaWithCredits();
  src.append(unit(1, 1, 300));
  const id = src.openSegmentOf("v", "l0")!;
  src.seal("v", "l0");
  const bytes = Buffer.from(src.exportSegment(id));
  bytes[bytes.length - 20]! ^= 0xff;
  const dst = new Arena(small, new SimulatedClock());
  const before = dst.report();
  t.throws(() => dst.importSegment(bytes), { instanceOf: SegmentFormatError });
  t.is(dst.counters.get("segment_format"), 1);
  t.deepEqual(dst.report(), before);
});

test("import is refused when no unpromised segment is free", (t) => {
  const src = arenaWithCredits();
  src.append(unit(1, 1, 300));
  const id = src.openSegmentOf("v", "l0")!;
  src.seal("v", "l0");
  const dst = new Arena(small, new SimulatedClock());
  dst.grant("v", "other", 1_000_000);
  t.throws(() => dst.importSegment(src.exportSegment(id)), { instanceOf: ArenaFullError });
});

test("only sealed segments export or discard", (t) => {
  const arena = arenaWithCredits();
  const { segmentId } = arena.append(unit(1, 1, 100));
  t.throws(() => arena.exportSegment(segmentId), { instanceOf: SegmentStateError });
  t.throws(() => arena.discard(segmentId), { instanceOf: SegmentStateError });
  arena.seal("v", "l0");
  t.true(arena.discard(segmentId));
});

test("regression bench:scale 1,000 active lanes never finished: ramBytes, asked per lane on every pressure check, equals the report's figure without walking the segments", (t) => {
  // A holder's pressure check asked every lane's arena for a full report (a walk over all its
  // segments) on every seal and refresh timer: quadratic in lanes. It now reads `ramBytes`.
  const arena = arenaWithCredits();
  t.is(arena.ramBytes, arena.report().ramBytes);
  let seq = 1;
  for (let i = 0; i < 30; i++, seq++) {
    arena.append(unit(seq, seq, 960));
    t.is(arena.ramBytes, arena.report().ramBytes, `after unit ${seq}`);
  }
  arena.seal("v", "l0");
  arena.release("v", "l0", RangeSet.of(1, seq - 1));
  t.is(arena.ramBytes, arena.report().ramBytes, "after a release recycles segments");
  t.true(arena.ramBytes < 30 * 960);
});
