import test from "ava";
import { ControlFenceError } from "../../custody/control-error.ts";
import { decodeControlEvent, encodeControlEvent, hashControlEvent, type ControlEventBody } from "../../custody/control-event.ts";
import { applyControlEvent, foldControlEntry, INITIAL_CONTROL_STATE, type ControlState } from "../../custody/control-state.ts";
import { admit, createOb, eventOn } from "./control-fixtures.ts";

function build(bodies: ControlEventBody[], state: ControlState = INITIAL_CONTROL_STATE): ControlState {
  for (const b of bodies) {
    const event = eventOn(state, b);
    state = foldControlEntry(state, { seq: state.lastSeq + 1, event, hash: hashControlEvent(event) });
  }
  return state;
}

const base = () => build([admit("h1"), createOb("ob1", ["h1"])]);
const failover = (term: number, recoveredCut: number, oldHead: number, firstSeq = oldHead + 1): ControlEventBody => ({ type: "commit_failover", volume: "vol1", lane: "l0", term, recoveredCut, oldHead, firstSeq });

test("a failover records the recovered cut, the old head it abandons above the cut and where the new term starts; it round-trips its canonical encoding", (t) => {
  const s = build([failover(2, 97, 100)], base());
  t.like(s.failovers?.["vol1/l0"], { term: 2, recoveredCut: 97, oldHead: 100, firstSeq: 101 });
  const e = eventOn(base(), failover(2, 97, 100));
  t.deepEqual(decodeControlEvent(encodeControlEvent(e)), e);
});

test("a failover whose term does not advance, whose cut is above the old head, or whose new term starts at or below the old head is refused and changes nothing", (t) => {
  const s = build([failover(2, 97, 100)], base());
  for (const bad of [failover(2, 120, 130), failover(3, 101, 100), failover(3, 98, 100, 100), failover(3, 90, 140)]) {
    const err = t.throws(() => applyControlEvent(s, eventOn(s, bad)), { instanceOf: ControlFenceError });
    t.is(err?.code, "failover_order");
    const folded = foldControlEntry(s, { seq: s.lastSeq + 1, event: eventOn(s, bad), hash: hashControlEvent(eventOn(s, bad)) });
    t.deepEqual(folded.failovers, s.failovers);
  }
  t.like(build([failover(3, 140, 150)], s).failovers?.["vol1/l0"], { term: 3, recoveredCut: 140 });
});

test("a failover of a lane no obligation covers is refused", (t) => {
  const s = base();
  const err = t.throws(() => applyControlEvent(s, eventOn(s, { ...failover(2, 1, 2), lane: "nope" } as ControlEventBody)), { instanceOf: ControlFenceError });
  t.is(err?.code, "unknown_obligation");
});
