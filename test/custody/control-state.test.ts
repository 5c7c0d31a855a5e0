import test from "ava";
import { RangeSet } from "../../lanes/range-set.ts";
import { ControlFenceError, ControlLogRegressionError, type ControlFenceCode } from "../../custody/control-error.ts";
import { decodeControlEvent, encodeControlEvent, hashControlEvent, GENESIS_HASH, type ControlEvent, type ControlEventBody } from "../../custody/control-event.ts";
import {
  applyControlEvent,
  foldControlEntry,
  foldControlLog,
  INITIAL_CONTROL_STATE,
  isReleaseAuthorized,
  OPEN_END,
  receiptVerifyContext,
  releaseFrontiers,
  type ControlLogEntry,
  type ControlState,
} from "../../custody/control-state.ts";
import { ReceiptError } from "../../custody/receipt-error.ts";
import { ReceiptLedger } from "../../custody/receipt-ledger.ts";
import { admit, createOb, eventOn, release } from "./control-fixtures.ts";
import { batchOf, manualClock, receipt, signed, STREAM } from "./receipt-fixtures.ts";

/** Builds a valid chain by applying each body to the state it was prepared against. */
function build(bodies: ControlEventBody[], from: { state: ControlState; entries: ControlLogEntry[] } = { state: INITIAL_CONTROL_STATE, entries: [] }) {
  let { state, entries } = from;
  for (const b of bodies) {
    const event = eventOn(state, b);
    const entry = { seq: state.lastSeq + 1, event, hash: hashControlEvent(event) };
    state = foldControlEntry(state, entry);
    entries = [...entries, entry];
  }
  return { state, entries };
}

const base = () => build([admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2"])]);

function assertFenced(t: import("ava").ExecutionContext, s: ControlState, e: ControlEvent, code: ControlFenceCode) {
  const err = t.throws(() => applyControlEvent(s, e), { instanceOf: ControlFenceError });
  t.is(err?.code, code);
  // Committed anyway (a non-compliant writer): the fold records the refusal and changes nothing else.
  const folded = foldControlEntry(s, { seq: s.lastSeq + 1, event: e, hash: hashControlEvent(e) });
  t.deepEqual({ ...folded, lastSeq: s.lastSeq, headHash: s.headHash, rejected: s.rejected }, s);
  t.is(folded.rejected.at(-1)?.code, code);
}

test("every control event type round-trips through its canonical encoding", (t) => {
  const s = base().state;
  const bodies: ControlEventBody[] = [
    createOb("ob2", ["h1"], 5),
    admit("h1", 2),
    { type: "prepare_transfer", transferId: "t1", obligationId: "ob1", fromHolder: "h1", toHolder: "relay", ranges: RangeSet.from([[1, 4], [9, 12]]) },
    { type: "activate_replacement", transferId: "t1" },
    release("h1", 1, 4, ["h2", "relay"]),
    { type: "retire_holder", holderId: "relay", incarnation: 1 },
    { type: "policy_change", topologyEpoch: 2, policyGeneration: 1, reason: "add eu-west" },
    { type: "declare_failure", scope: "zone", domain: "aws/us-east-1/az-h2", holderIds: ["h2"] },
    { type: "hold_ranges", holdId: "pin-1", kind: "pitr_pin", volume: "vol1", lane: "l0", ranges: RangeSet.from([[1, 4], [9, 12]]), holders: ["h1"], untilMs: 0, by: "operator" },
    { type: "end_hold", holdId: "pin-1", reason: "done" },
  ];
  for (const b of bodies) {
    const e = eventOn(s, b);
    const bytes = encodeControlEvent(e);
    t.deepEqual(encodeControlEvent(decodeControlEvent(bytes)), bytes, b.type);
  }
  t.is(t.throws(() => decodeControlEvent(Uint8Array.from([0x93, 1, 2, 3])), { instanceOf: ControlFenceError })?.code, "malformed");
});

test("the fold yields holders, keys, generations, obligations and release frontiers", (t) => {
  const { state } = build([release("h1", 1, 10, ["h2"])], base());
  t.deepEqual(Object.keys(state.holders).sort(), ["h1", "h2", "relay"]);
  t.is(state.holders.h1!.publicKey.byteLength, 32);
  t.is(state.topologyEpoch, 1);
  t.is(state.policyGeneration, 1);
  t.deepEqual(state.obligations.ob1!.responsible.h1!.toJSON(), [[11, OPEN_END]]);
  t.deepEqual(releaseFrontiers(state).map((f) => [f.obligationId, f.holderId, f.released.toJSON()]), [["ob1", "h1", [[1, 10]]]]);
  t.true(isReleaseAuthorized(state, "ob1", "h1", RangeSet.of(3, 7)));
  t.false(isReleaseAuthorized(state, "ob1", "h2", RangeSet.of(3, 7)));
});

test("an event prepared under an old epoch is rejected after a policy change", (t) => {
  const before = base().state;
  const after = build([{ type: "policy_change", topologyEpoch: 2, policyGeneration: 1, reason: "topology" }], base()).state;
  assertFenced(t, after, { ...eventOn(before, release("h1", 1, 5, ["h2"])), prevHash: after.headHash }, "stale_epoch");
});

test("an event prepared under an old policy generation is rejected", (t) => {
  const before = base().state;
  const after = build([{ type: "policy_change", topologyEpoch: 1, policyGeneration: 2, reason: "rpo" }], base()).state;
  assertFenced(t, after, { ...eventOn(before, release("h1", 1, 5, ["h2"])), prevHash: after.headHash }, "stale_generation");
});

test("an event claiming an epoch the log never reached is a fence mismatch", (t) => {
  const s = base().state;
  assertFenced(t, s, { ...eventOn(s, release("h1", 1, 5, ["h2"])), preparedEpoch: 9 }, "fence_mismatch");
});

test("two holders cannot release relying on each other: the second release is not covered", (t) => {
  const { state } = build([release("h1", 1, 10, ["h2"])], base());
  assertFenced(t, state, eventOn(state, release("h2", 1, 10, ["h1"])), "release_not_covered");
});

test("a release must rely on someone else, and that someone must be active", (t) => {
  const s = base().state;
  assertFenced(t, s, eventOn(s, release("h1", 1, 10, [])), "release_not_covered");
  assertFenced(t, s, eventOn(s, release("h1", 1, 10, ["h1"])), "release_not_covered");
  const failed = build([{ type: "declare_failure", scope: "holder", domain: "h2", holderIds: ["h2"] }], base()).state;
  assertFenced(t, failed, eventOn(failed, release("h1", 1, 10, ["h2"])), "release_not_covered");
});

test("released ranges never reappear at the holder that released them", (t) => {
  const { state } = build([release("h1", 1, 10, ["h2"])], base());
  const back = { type: "prepare_transfer", transferId: "t9", obligationId: "ob1", fromHolder: "h2", toHolder: "h1", ranges: RangeSet.of(5, 20) } as const;
  assertFenced(t, state, eventOn(state, back), "released_range_reappears");
});

test("a holder cannot release ranges it is not responsible for", (t) => {
  const s = build([createOb("ob2", ["h2"], 100)], base()).state;
  assertFenced(t, s, eventOn(s, release("h2", 1, 10, ["h1"], "ob2")), "not_responsible");
});

test("a transfer prepared under an older generation cannot be activated under the new one", (t) => {
  const prepared = build([{ type: "prepare_transfer", transferId: "t1", obligationId: "ob1", fromHolder: "h1", toHolder: "relay", ranges: RangeSet.of(1, 50) }], base());
  const bumped = build([{ type: "policy_change", topologyEpoch: 1, policyGeneration: 2, reason: "witness set" }], prepared).state;
  assertFenced(t, bumped, eventOn(bumped, { type: "activate_replacement", transferId: "t1" }), "stale_generation");
});

test("prepare, activate and release move custody to the replacement before the old holder may forget", (t) => {
  const prepared = build([{ type: "prepare_transfer", transferId: "t1", obligationId: "ob1", fromHolder: "h1", toHolder: "relay", ranges: RangeSet.of(1, 50) }], base());
  // Before activation the replacement backs nothing.
  assertFenced(t, prepared.state, eventOn(prepared.state, release("h1", 1, 50, ["relay"])), "release_not_covered");
  const { state } = build([{ type: "activate_replacement", transferId: "t1" }, release("h1", 1, 50, ["relay"])], prepared);
  t.true(isReleaseAuthorized(state, "ob1", "h1", RangeSet.of(1, 50)));
  t.deepEqual(state.obligations.ob1!.responsible.relay!.toJSON(), [[1, 50]]);
});

test("declaring a failure or losing a controller releases nothing: only a committed release does", (t) => {
  const { state } = build([{ type: "declare_failure", scope: "zone", domain: "aws/us-east-1/az-h1", holderIds: [] }], base());
  t.is(state.holders.h1!.status, "failed");
  t.false(isReleaseAuthorized(state, "ob1", "h1", RangeSet.of(1, 1)));
  t.deepEqual(state.obligations.ob1!.released, {});
  t.deepEqual(state.obligations.ob1!.responsible.h1!.toJSON(), [[1, OPEN_END]], "the failed holder's duty stays on record");
  // A controller that disconnects simply commits nothing more: the frontier is what the log says.
  t.deepEqual(foldControlLog(build([], base()).entries).obligations, base().state.obligations);
});

test("a holder still responsible for ranges cannot be retired", (t) => {
  const s = base().state;
  assertFenced(t, s, eventOn(s, { type: "retire_holder", holderId: "h1", incarnation: 1 }), "holder_still_responsible");
});

test("re-admitting a holder needs a newer incarnation", (t) => {
  const s = base().state;
  assertFenced(t, s, eventOn(s, admit("h1", 1)), "stale_incarnation");
  t.is(build([admit("h1", 2)], base()).state.holders.h1!.incarnation, 2);
});

test("a policy change must advance the epoch or the generation", (t) => {
  const s = base().state;
  assertFenced(t, s, eventOn(s, { type: "policy_change", topologyEpoch: 1, policyGeneration: 1, reason: "noop" }), "policy_not_advancing");
});

test("an entry that does not name the previous hash breaks the chain", (t) => {
  const { state, entries } = base();
  const e = { ...eventOn(state, release("h1", 1, 5, ["h2"])), prevHash: GENESIS_HASH };
  const err = t.throws(() => foldControlEntry(state, { seq: state.lastSeq + 1, event: e, hash: hashControlEvent(e) }), { instanceOf: ControlLogRegressionError });
  t.is(err?.code, "chain_broken");
  // Dropping an event from the middle is caught the same way.
  t.is(t.throws(() => foldControlLog([entries[0]!, entries[2]!]), { instanceOf: ControlLogRegressionError })?.code, "chain_broken");
});

test("receipts verify against keys and frontiers from the folded log", (t) => {
  const { state } = build([release("h1", 1, 5, ["h2"])], base());
  const ctx = receiptVerifyContext(state, STREAM);
  const ledger = new ReceiptLedger({ clock: manualClock(), maxEvidenceAgeMs: 60_000 });
  ledger.apply(signed(batchOf([receipt({ seq: 1, ranges: [[6, 20]] })])), ctx);
  t.deepEqual(ledger.coverage("vol1", "l0").toJSON(), [[6, 20]]);
  const err = t.throws(() => ledger.apply(signed(batchOf([receipt({ seq: 2, ranges: [[1, 20]] })])), ctx), { instanceOf: ReceiptError });
  t.is(err?.code, "range_regression");
  const bumped = build([admit("h1", 2)], build([release("h1", 1, 5, ["h2"])], base())).state;
  const err2 = t.throws(() => ledger.apply(signed(batchOf([receipt({ seq: 3, ranges: [[6, 30]] })])), receiptVerifyContext(bumped, STREAM)), { instanceOf: ReceiptError });
  t.is(err2?.code, "stale_incarnation");
});

test("release_to_base: a holder may release ranges its own base contains, never beyond the base's cut nor on an inactive base holder", (t) => {
  const s = base().state;
  const ok = applyControlEvent(s, eventOn(s, { type: "release_to_base", obligationId: "ob1", holderId: "h1", ranges: RangeSet.of(1, 50), baseHolder: "h1", snapshotId: "base-60", baseThroughSeq: 60 }));
  t.true(isReleaseAuthorized(ok, "ob1", "h1", RangeSet.of(1, 50)));
  assertFenced(t, s, eventOn(s, { type: "release_to_base", obligationId: "ob1", holderId: "h1", ranges: RangeSet.of(1, 61), baseHolder: "h1", snapshotId: "base-60", baseThroughSeq: 60 }), "release_not_covered");
  const failed = build([{ type: "declare_failure", scope: "holder", domain: "h2", holderIds: ["h2"] }], base()).state;
  assertFenced(t, failed, eventOn(failed, { type: "release_to_base", obligationId: "ob1", holderId: "h1", ranges: RangeSet.of(1, 10), baseHolder: "h2", snapshotId: "base-60", baseThroughSeq: 60 }), "holder_not_active");
  const bytes = encodeControlEvent(eventOn(s, { type: "release_to_base", obligationId: "ob1", holderId: "h1", ranges: RangeSet.of(1, 50), baseHolder: "h1", snapshotId: "base-60", baseThroughSeq: 60 }));
  t.deepEqual(encodeControlEvent(decodeControlEvent(bytes)), bytes, "round-trips canonically");
});

test("holds: a PITR pin or a registered recovery makes the fold refuse releasing held ranges at the holders it binds, until it ends", (t) => {
  const pin: ControlEventBody = { type: "hold_ranges", holdId: "pin-a", kind: "pitr_pin", volume: "vol1", lane: "l0", ranges: RangeSet.of(5, 8), holders: ["h1"], untilMs: 0, by: "operator" };
  const { state: pinned } = build([pin], base());
  t.deepEqual(Object.keys(pinned.holds), ["pin-a"]);
  t.is(pinned.holds["pin-a"]!.ranges.toString(), "5-8");
  assertFenced(t, pinned, eventOn(pinned, release("h1", 1, 6, ["h2"])), "range_held");
  // Outside the pin, or at a holder it does not bind, releases go on.
  t.notThrows(() => applyControlEvent(pinned, eventOn(pinned, release("h1", 1, 4, ["h2"]))));
  t.notThrows(() => applyControlEvent(pinned, eventOn(pinned, release("h2", 5, 8, ["h1"]))));
  assertFenced(t, pinned, eventOn(pinned, pin), "duplicate_id");
  assertFenced(t, pinned, eventOn(pinned, { type: "end_hold", holdId: "pin-x", reason: "typo" }), "unknown_hold");
  assertFenced(t, pinned, eventOn(pinned, { ...pin, holdId: "pin-b", lane: "no-such-lane" } as ControlEventBody), "unknown_obligation");

  // A recovery reading from every holder (none named) binds them all.
  const { state: reading } = build([{ type: "hold_ranges", holdId: "rec-1", kind: "recovery", volume: "vol1", lane: "l0", ranges: RangeSet.of(1, 3), holders: [], untilMs: 1_000, by: "custody recover" }], { state: pinned, entries: [] });
  assertFenced(t, reading, eventOn(reading, release("h2", 2, 2, ["h1"])), "range_held");

  const { state: ended } = build([{ type: "end_hold", holdId: "pin-a", reason: "done" }, { type: "end_hold", holdId: "rec-1", reason: "recovery finished" }], { state: reading, entries: [] });
  t.deepEqual(ended.holds, {});
  t.notThrows(() => applyControlEvent(ended, eventOn(ended, release("h1", 1, 8, ["h2"]))));
});
