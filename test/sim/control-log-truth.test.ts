import test from "ava";
import { hashControlEvent, type ControlEventBody } from "../../custody/control-event.ts";
import { foldControlEntry, INITIAL_CONTROL_STATE, type ControlState } from "../../custody/control-state.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { ControlLogTruth } from "../../sim/control-log-truth.ts";
import { checkHolds, checkReleasesCommitted, InvariantId, type HolderTruth } from "../../sim/invariants.ts";
import { admit, createOb, eventOn, release } from "../custody/control-fixtures.ts";

/** Commits `bodies` in order to a log folded by `truth`, as the simulated world's log does. */
function commit(truth: ControlLogTruth, bodies: ControlEventBody[], from: ControlState = INITIAL_CONTROL_STATE): ControlState {
  let s = from;
  for (const b of bodies) {
    const event = eventOn(s, b);
    const entry = { seq: s.lastSeq + 1, event, hash: hashControlEvent(event) };
    s = foldControlEntry(s, entry);
    truth.fold(entry);
  }
  return s;
}

const holder = (id: string, released: RangeSet, truth: ControlLogTruth): HolderTruth => ({
  id,
  site: "s",
  ram: RangeSet.EMPTY,
  disk: RangeSet.EMPTY,
  ramSurvivesPower: false,
  released,
  ledger: RangeSet.EMPTY,
  granted: RangeSet.EMPTY,
  committed: truth.committed(id),
});

test("the log truth gives each holder's committed frontier and each standing hold with what was released before it", (t) => {
  const truth = new ControlLogTruth("vol1", "l0");
  let s = commit(truth, [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"]), release("h1", 1, 10, ["h2"])]);
  t.is(truth.committed("h1").toString(), "1-10");
  t.true(truth.committed("h2").isEmpty);
  s = commit(truth, [{ type: "hold_ranges", holdId: "pin-a", kind: "pitr_pin", volume: "vol1", lane: "l0", ranges: RangeSet.of(5, 20), holders: [], untilMs: 0, by: "operator" }], s);
  const [pin] = truth.holds();
  t.is(pin?.holdId, "pin-a");
  t.is(pin?.releasedBefore["h1"]?.toString(), "1-10", "what the log released before the pin stays released");

  // A release under the pin is refused by the fold: the committed frontier does not move.
  s = commit(truth, [release("h1", 11, 15, ["h2"])], s);
  t.is(truth.committed("h1").toString(), "1-10");
  const obs = (released: RangeSet) => ({ atMs: 1, holders: [holder("h1", released, truth)], credits: [], receipts: [], holds: truth.holds() });
  t.deepEqual([...checkHolds(obs(RangeSet.of(1, 10))), ...checkReleasesCommitted(obs(RangeSet.of(1, 10)))], []);
  const bad = obs(RangeSet.of(1, 12));
  t.deepEqual(checkHolds(bad).map((v) => v.invariant), [InvariantId.heldRangeReleased]);
  t.deepEqual(checkReleasesCommitted(bad).map((v) => v.invariant), [InvariantId.releaseBeyondLog]);

  commit(truth, [{ type: "end_hold", holdId: "pin-a", reason: "done" }, release("h1", 11, 15, ["h2"])], s);
  t.deepEqual(truth.holds(), []);
  t.is(truth.committed("h1").toString(), "1-15");
});
