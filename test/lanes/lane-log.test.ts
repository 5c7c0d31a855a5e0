import test from "ava";
import { LaneLog, OverlappingUnitError, StaleTermError, UnitVerdict, WrongLaneError } from "../../lanes/lane-log.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { makeTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";

function unit(first: number, last: number, term = 1, lane = "l0"): TransportUnit {
  const n = last - first + 1;
  return makeTransportUnit({
    volume: "v",
    lane,
    term,
    firstSeq: first,
    lastSeq: last,
    commitTs: Array.from({ length: n }, (_, i) => 1000 + first + i),
    payload: new Uint8Array(n * 4).fill(first & 0xff),
  });
}

test("in-order units extend the contiguous prefix", (t) => {
  const log = new LaneLog("v", "l0");
  t.is(log.accept(unit(1, 3)).verdict, UnitVerdict.accepted);
  const p = log.accept(unit(4, 6));
  t.is(p.verdict, UnitVerdict.accepted);
  t.is(p.contiguousThrough, 6);
  t.true(p.holes.isEmpty);
});

test("an out-of-order unit is held and its gap reported until the gap fills", (t) => {
  const log = new LaneLog("v", "l0");
  log.accept(unit(1, 3));
  const held = log.accept(unit(7, 9));
  t.is(held.verdict, UnitVerdict.held);
  t.is(held.contiguousThrough, 3);
  t.deepEqual(held.holes.toJSON(), [[4, 6]]);
  t.deepEqual(log.retained.toJSON(), [[1, 3], [7, 9]]);
  const filled = log.accept(unit(4, 6));
  t.is(filled.verdict, UnitVerdict.accepted);
  t.is(filled.contiguousThrough, 9);
  t.true(filled.holes.isEmpty);
});

test("a duplicate unit is idempotent and changes nothing", (t) => {
  const log = new LaneLog("v", "l0");
  log.accept(unit(1, 3));
  const before = log.retained;
  t.is(log.accept(unit(1, 3)).verdict, UnitVerdict.duplicate);
  t.is(log.accept(unit(2, 2)).verdict, UnitVerdict.duplicate);
  t.true(log.retained.equals(before));
});

test("a stale-term unit is rejected with stale_term and the log is unchanged", (t) => {
  const log = new LaneLog("v", "l0");
  log.accept(unit(1, 3, 5));
  const before = log.retained;
  const err = t.throws(() => log.accept(unit(4, 6, 4)), { instanceOf: StaleTermError });
  t.is(err?.code, "stale_term");
  t.true(log.retained.equals(before));
  t.is(log.term, 5);
});

test("a newer writer term is accepted and fences older terms", (t) => {
  const log = new LaneLog("v", "l0");
  log.accept(unit(1, 3, 1));
  log.accept(unit(4, 6, 2));
  t.is(log.term, 2);
  t.throws(() => log.accept(unit(7, 8, 1)), { instanceOf: StaleTermError });
});

test("a partly overlapping unit is rejected and the log is unchanged", (t) => {
  const log = new LaneLog("v", "l0");
  log.accept(unit(1, 5));
  t.throws(() => log.accept(unit(4, 8)), { instanceOf: OverlappingUnitError });
  t.deepEqual(log.retained.toJSON(), [[1, 5]]);
});

test("a unit of another lane is rejected", (t) => {
  const log = new LaneLog("v", "l0");
  t.throws(() => log.accept(unit(1, 1, 1, "l1")), { instanceOf: WrongLaneError });
});

test("released ranges never reappear: a re-sent released unit is a duplicate", (t) => {
  const log = new LaneLog("v", "l0");
  log.accept(unit(1, 3));
  log.accept(unit(4, 6));
  t.deepEqual(log.release(RangeSet.of(1, 3)).toJSON(), [[1, 3]]);
  t.is(log.accept(unit(1, 3)).verdict, UnitVerdict.duplicate);
  t.deepEqual(log.retained.toJSON(), [[4, 6]]);
  t.is(log.contiguousThrough(), 6, "released sequences still count as received");
});
