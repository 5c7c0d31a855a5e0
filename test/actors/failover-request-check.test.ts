/**
 * Which failover requests the controller commits (pure): every lane is checked before anything is
 * committed, a stale term gets the fold's own `failover_order`, and the same request again is
 * recognised as already committed. The request over NATS is in test/e2e/failover-record.test.ts.
 */
import test from "ava";
import { checkFailoverRequest, FailoverRequestRefusedError, type FailoverRequest } from "../../actors/controller/failover-request-check.ts";
import { ControlFenceError } from "../../custody/control-error.ts";
import { hashControlEvent, type ControlEventBody } from "../../custody/control-event.ts";
import { foldControlEntry, INITIAL_CONTROL_STATE, type ControlState } from "../../custody/control-state.ts";
import { parseCuts } from "../../cli/commands/failover.ts";
import { admit, createOb, eventOn } from "../custody/control-fixtures.ts";

function build(bodies: ControlEventBody[], state: ControlState = INITIAL_CONTROL_STATE): ControlState {
  for (const b of bodies) {
    const event = eventOn(state, b);
    state = foldControlEntry(state, { seq: state.lastSeq + 1, event, hash: hashControlEvent(event) });
  }
  return state;
}

const VOLUME = { volume: "vol1", lanes: ["l0", "l1"] };
const heads: Record<string, number> = { l0: 100, l1: 50 };
const base = build([admit("h1"), { ...createOb("vol1-l0", ["h1"]), volume: "vol1", lane: "l0" } as ControlEventBody]);
const req = (over: Partial<FailoverRequest> = {}): FailoverRequest => ({ volume: "vol1", lanes: ["l0"], term: 2, recoveredCut: { l0: 97 }, ...over });
const check = (s: ControlState, r: FailoverRequest) => checkFailoverRequest(s, VOLUME, r, (lane) => heads[lane] ?? 0);

test("a good request: each lane continues from its cut, its old head is the receipted head, nothing is committed yet", (t) => {
  const both = build([{ ...createOb("vol1-l1", ["h1"]), volume: "vol1", lane: "l1" } as ControlEventBody], base);
  t.deepEqual(check(both, req({ lanes: ["l0", "l1"], recoveredCut: { l0: 97 } })), [
    { lane: "l0", cut: 97, oldHead: 100, committed: false },
    { lane: "l1", cut: 0, oldHead: 50, committed: false },
  ]);
});

test("another volume, a lane outside the volume, named twice or without an obligation, a cut for a lane not failed over, a cut above the receipted head and term 0 are refused", (t) => {
  for (const [bad, reason] of [
    [req({ volume: "vol2" }), /serves vol1/],
    [req({ lanes: ["l9"] }), /lane l9 is not a lane of vol1/],
    [req({ lanes: ["l0", "l0"] }), /named twice/],
    [req({ recoveredCut: { l0: 97, l1: 3 } }), /a cut for lane l1/],
    [req({ recoveredCut: { l0: 101 } }), /above 100/],
    [req({ term: 0 }), /term below 1/],
    [req({ lanes: ["l0", "l1"] }), /no obligation covers lane l1/],
  ] as const) {
    const err = t.throws(() => check(base, bad), { instanceOf: FailoverRequestRefusedError });
    t.is(err?.code, "failover_request_refused");
    t.regex(err!.message, reason);
  }
});

test("once committed, the same term and cut is recognised as committed (a retry); another cut or an older term gets the fold's failover_order", (t) => {
  const s = build([{ type: "commit_failover", volume: "vol1", lane: "l0", term: 2, recoveredCut: 97, oldHead: 100, firstSeq: 101 }], base);
  heads["l0"] = 120; // receipts that arrived since do not move the committed plan
  t.deepEqual(check(s, req()), [{ lane: "l0", cut: 97, oldHead: 100, committed: true }]);
  for (const bad of [req({ recoveredCut: { l0: 98 } }), req({ term: 1 })]) t.is(t.throws(() => check(s, bad), { instanceOf: ControlFenceError })?.code, "failover_order");
  t.deepEqual(check(s, req({ term: 3, recoveredCut: { l0: 110 } })), [{ lane: "l0", cut: 110, oldHead: 120, committed: false }]);
  heads["l0"] = 100;
});

test("custody failover's --cut takes lane=seq pairs, each lane once", (t) => {
  t.deepEqual(parseCuts(["l0=97", "l1=0"]), { l0: 97, l1: 0 });
  for (const bad of [["l0"], ["l0=x"], ["l0=1", "l0=2"], ["=3"]]) t.throws(() => parseCuts(bad));
});
