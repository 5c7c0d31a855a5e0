/**
 * Control rights per volume (issue #46): in a signed log a controller's event counts only when the
 * operator admitted it for every volume the event touches, and transfers, releases, obligations and
 * persistence choices name only holders bound to the event's volume. Pure: an in-memory log.
 */
import test from "ava";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlFenceCode, ControlFenceError } from "../../custody/control-error.ts";
import { decodeControlEvent, encodeControlEvent, type ControlEvent, type ControlEventBody, type ControlEventOf } from "../../custody/control-event.ts";
import { encodeAdmissionRequest } from "../../custody/admission-request.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import { applyControlEvent, INITIAL_CONTROL_STATE, isReleaseAuthorized, type ControlState } from "../../custody/control-state.ts";
import { eventScope } from "../../custody/control-scope.ts";
import type { ControlSigner, ControlTrust } from "../../custody/control-trust.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { clock, eventOn } from "./control-fixtures.ts";

const signer = (id: string): ControlSigner & { publicKey: Uint8Array } => {
  const kp = generateHolderKeyPair();
  return { id, privateKey: kp.privateKey, publicKey: kp.publicKey };
};
const operator = signer("operator");
const ctl1 = signer("ctl-1");
const ctl2 = signer("ctl-2");
const trust: ControlTrust = { operators: { operator: publicKeyFromRaw(operator.publicKey) } };
const holderKeys = Object.fromEntries(["h-w1", "h-e1", "h-e2", "h-s1", "h-e3", "h-old"].map((h) => [h, generateHolderKeyPair().publicKey]));

const admitHolder = (holderId: string, volumes: string[] | undefined, incarnation = 1): ControlEventBody => ({
  type: "admit_holder",
  holderId,
  incarnation,
  publicKey: holderKeys[holderId]!,
  failureDomain: `east/az-${holderId}/host-${holderId}`,
  ...(volumes !== undefined ? { volumes } : {}),
});
const obligation = (volume: string, lane: string, holders: string[]): ControlEventBody => ({ type: "create_obligation", obligationId: `${volume}-${lane}`, volume, lane, representation: "raw", holders, fromSeq: 1 });
const release = (obligationId: string, holderId: string, reliesOn: string[], last = 10): ControlEventBody => ({ type: "release_ranges", obligationId, holderId, ranges: RangeSet.of(1, last), reliesOn });
const transfer = (transferId: string, obligationId: string, fromHolder: string, toHolder: string): ControlEventBody => ({ type: "prepare_transfer", transferId, obligationId, fromHolder, toHolder, ranges: RangeSet.of(1, 10) });
const hold = (holdId: string, volume: string): ControlEventBody => ({ type: "hold_ranges", holdId, kind: "pitr_pin", volume, lane: "l0", ranges: RangeSet.of(100, 200), holders: [], untilMs: 0, by: "test" });

/**
 * The finding's deployment: vol-a (h-w1, h-e1) with controller ctl-1, vol-b (h-e2) with ctl-2, one
 * signed log. ctl-1 has prepared a transfer on vol-a and the operator pinned ranges of vol-a.
 */
async function twoVolumes(): Promise<{ store: InMemoryControlLog; f: ControlLogFollower }> {
  const store = new InMemoryControlLog("ctl");
  const f = new ControlLogFollower(store, undefined, trust);
  const as = (s: ControlSigner) => ({ controller: s.id, clock, signer: s });
  for (const [c, volume] of [[ctl1, "vol-a"], [ctl2, "vol-b"]] as const) {
    await commitControlEvent(store, f, as(operator), () => ({ type: "admit_controller", controllerId: c.id, publicKey: c.publicKey, volumes: [volume] }));
  }
  for (const b of [admitHolder("h-w1", ["vol-a"]), admitHolder("h-e1", ["vol-a"]), admitHolder("h-e2", ["vol-b"]), obligation("vol-a", "l0", ["h-w1", "h-e1"]), obligation("vol-b", "l0", ["h-e2"]), hold("pin-a", "vol-a")]) {
    await commitControlEvent(store, f, as(operator), () => b);
  }
  await commitControlEvent(store, f, as(ctl1), () => transfer("t-a", "vol-a-l0", "h-w1", "h-e1"));
  t0 = f.state;
  return { store, f };
}
let t0: ControlState = INITIAL_CONTROL_STATE;

/** Appends `body` signed by `s` straight to the store, as a controller that skips its own check would. */
async function appendAs(store: InMemoryControlLog, f: ControlLogFollower, s: ControlSigner, body: ControlEventBody): Promise<ControlState> {
  const st = await f.refresh();
  await store.append(eventOn(st, body, s.id), st.lastSeq, s);
  return f.refresh();
}

/** Everything but the record of refusals and the position read. */
const essentials = ({ rejected: _r, lastSeq: _l, lastEntryHash: _h, ...rest }: ControlState) => rest;

/** Every control event type ctl-2 (admitted for vol-b) might try on vol-a. */
const onVolA: [string, ControlEventBody][] = [
  ["create_obligation", obligation("vol-a", "l1", ["h-w1"])],
  ["admit_holder (a new incarnation of a vol-a holder)", admitHolder("h-w1", undefined, 2)],
  ["admit_holder (vol-b's own holder also bound to vol-a)", admitHolder("h-e2", ["vol-a", "vol-b"], 2)],
  ["admit_holder (a new holder for vol-a)", admitHolder("h-e3", ["vol-a"])],
  ["admit_holder (a new unscoped holder)", admitHolder("h-e3", undefined)],
  ["prepare_transfer (to vol-b's holder)", transfer("t-evil", "vol-a-l0", "h-e1", "h-e2")],
  ["activate_replacement (ctl-1's transfer)", { type: "activate_replacement", transferId: "t-a" }],
  ["release_ranges (the finding)", release("vol-a-l0", "h-w1", ["h-e1"])],
  ["release_to_base", { type: "release_to_base", obligationId: "vol-a-l0", holderId: "h-w1", ranges: RangeSet.of(1, 5), baseHolder: "h-e1", snapshotId: "snap", baseThroughSeq: 100 }],
  ["retire_holder", { type: "retire_holder", holderId: "h-w1", incarnation: 1 }],
  ["declare_failure (a vol-a holder)", { type: "declare_failure", scope: "holder", domain: "east/az-h-w1/host-h-w1", holderIds: ["h-w1"] }],
  ["declare_failure (a region holding both volumes)", { type: "declare_failure", scope: "region", domain: "east", holderIds: [] }],
  ["policy_change", { type: "policy_change", topologyEpoch: 2, policyGeneration: 1, reason: "fence everyone" }],
  ["hold_ranges", hold("pin-evil", "vol-a")],
  ["end_hold (the operator's pin on vol-a)", { type: "end_hold", holdId: "pin-a", reason: "unpin" }],
  ["commit_failover", { type: "commit_failover", volume: "vol-a", lane: "l0", term: 2, recoveredCut: 5, oldHead: 10, firstSeq: 11 }],
  ["choose_persistence", { type: "choose_persistence", volume: "vol-a", lane: "l0", fromSeq: 1, targets: ["h-w1"], scenarios: [] }],
];

for (const [name, body] of onVolA) {
  test(`ctl-2 (vol-b) committing ${name} on vol-a is skipped as not_authorized_for_volume and changes nothing`, async (t) => {
    const { store, f } = await twoVolumes();
    const before = f.state;
    // Its own commit path refuses it before anything is appended.
    const local = await t.throwsAsync(commitControlEvent(store, f, { controller: "ctl-2", clock, signer: ctl2 }, () => body));
    t.true(local instanceof ControlFenceError && local.code === ControlFenceCode.not_authorized_for_volume, `local refusal: ${local?.message}`);
    t.is(await store.lastSeq(), before.lastSeq);
    // Appended anyway (a controller that skips the check): every reader skips it.
    const after = await appendAs(store, f, ctl2, body);
    t.deepEqual(after.rejected.slice(before.rejected.length).map((r) => r.code), [ControlFenceCode.not_authorized_for_volume]);
    t.deepEqual(essentials(after), essentials(before));
    t.deepEqual(essentials(await new ControlLogFollower(store, undefined, trust).replay()), essentials(after), "a fresh reader agrees");
  });
}

test("the finding's sequence by ctl-2 leaves vol-a's custody where it was, and ctl-1 keeps committing on top of it", async (t) => {
  const { store, f } = await twoVolumes();
  const before = f.state;
  for (const body of [release("vol-a-l0", "h-w1", ["h-e1"]), transfer("t-x", "vol-a-l0", "h-e1", "h-e2"), { type: "activate_replacement", transferId: "t-x" } as const, release("vol-a-l0", "h-e1", ["h-e2"])]) {
    await appendAs(store, f, ctl2, body);
  }
  // The refused activation is in the chain (the fold refused it, as any reader does); nothing else moved.
  t.deepEqual({ ...essentials(f.state), headHash: "" }, { ...essentials(before), headHash: "" });
  t.false(isReleaseAuthorized(f.state, "vol-a-l0", "h-w1", RangeSet.of(1, 10)));
  t.false(isReleaseAuthorized(f.state, "vol-a-l0", "h-e1", RangeSet.of(1, 10)));
  // activate_replacement names a transfer that was never prepared (its prepare was skipped): it touches no volume, and the fold refuses it.
  t.deepEqual(f.state.rejected.slice(before.rejected.length).map((r) => r.code), ["not_authorized_for_volume", "not_authorized_for_volume", "unknown_transfer", "not_authorized_for_volume"]);
  await commitControlEvent(store, f, { controller: "ctl-1", clock, signer: ctl1 }, () => release("vol-a-l0", "h-w1", ["h-e1"]));
  t.true(isReleaseAuthorized(f.state, "vol-a-l0", "h-w1", RangeSet.of(1, 10)));
});

test("an admitted controller's own events on its volume still apply: admissions, transfers, releases, holds, failovers, persistence, failures", async (t) => {
  const { store, f } = await twoVolumes();
  const as1 = { controller: "ctl-1", clock, signer: ctl1 };
  const bodies: ControlEventBody[] = [
    admitHolder("h-w1", undefined, 2), // key-continuity re-admission (auto-admission) keeps the holder's volumes
    admitHolder("h-s1", ["vol-a"]), // a standby a repair admits
    { type: "activate_replacement", transferId: "t-a" },
    transfer("t-s1", "vol-a-l0", "h-w1", "h-s1"),
    { type: "activate_replacement", transferId: "t-s1" },
    release("vol-a-l0", "h-w1", ["h-e1"]),
    { type: "release_to_base", obligationId: "vol-a-l0", holderId: "h-e1", ranges: RangeSet.of(6, 10), baseHolder: "h-s1", snapshotId: "snap", baseThroughSeq: 100 },
    hold("pin-1", "vol-a"),
    { type: "end_hold", holdId: "pin-1", reason: "done" },
    { type: "commit_failover", volume: "vol-a", lane: "l0", term: 2, recoveredCut: 5, oldHead: 10, firstSeq: 11 },
    { type: "choose_persistence", volume: "vol-a", lane: "l0", fromSeq: 1, targets: ["h-s1"], scenarios: ["crash"] },
    obligation("vol-a", "l1", ["h-e1"]),
    { type: "declare_failure", scope: "holder", domain: "east/az-h-s1/host-h-s1", holderIds: ["h-s1"] },
  ];
  for (const b of bodies) await commitControlEvent(store, f, as1, () => b);
  t.deepEqual(f.state.rejected, t0.rejected, "nothing refused");
  t.is(f.state.holders["h-w1"]?.incarnation, 2);
  t.deepEqual(f.state.holders["h-w1"]?.volumes, ["vol-a"]);
  t.true(isReleaseAuthorized(f.state, "vol-a-l0", "h-w1", RangeSet.of(1, 10)));
  t.is(f.state.holders["h-s1"]?.status, "failed");
  // ctl-2 on its own volume: a new holder, a transfer to it, a release relying on it, retiring the old one.
  const as2 = { controller: "ctl-2", clock, signer: ctl2 };
  await commitControlEvent(store, f, as2, () => admitHolder("h-e3", ["vol-b"]));
  await commitControlEvent(store, f, as2, () => transfer("t-b", "vol-b-l0", "h-e2", "h-e3"));
  await commitControlEvent(store, f, as2, () => ({ type: "activate_replacement", transferId: "t-b" }));
  await commitControlEvent(store, f, as2, () => release("vol-b-l0", "h-e2", ["h-e3"]));
  t.deepEqual(f.state.rejected, t0.rejected);
  t.true(isReleaseAuthorized(f.state, "vol-b-l0", "h-e2", RangeSet.of(1, 10)));
});

test("a controller may not admit itself or another controller, nor widen its volumes", async (t) => {
  const { store, f } = await twoVolumes();
  const before = f.state;
  const after = await appendAs(store, f, ctl2, { type: "admit_controller", controllerId: "ctl-2", publicKey: ctl2.publicKey, volumes: ["vol-a", "vol-b"] });
  t.is(after.rejected.at(-1)?.code, ControlFenceCode.signer_not_allowed);
  t.deepEqual(essentials(after), essentials(before));
  t.deepEqual(after.controllers?.["ctl-2"]?.volumes, ["vol-b"]);
});

test("a controller admitted for both volumes may commit an event touching both; the operator may commit anything", async (t) => {
  const { store, f } = await twoVolumes();
  const both = signer("ctl-ab");
  await commitControlEvent(store, f, { controller: "operator", clock, signer: operator }, () => ({ type: "admit_controller", controllerId: both.id, publicKey: both.publicKey, volumes: ["vol-a", "vol-b"] }));
  await commitControlEvent(store, f, { controller: both.id, clock, signer: both }, () => ({ type: "declare_failure", scope: "holder", domain: "nowhere", holderIds: ["h-w1", "h-e2"] }));
  t.is(f.state.holders["h-e2"]?.status, "failed");
  await commitControlEvent(store, f, { controller: "operator", clock, signer: operator }, () => ({ type: "policy_change", topologyEpoch: 2, policyGeneration: 1, reason: "operator" }));
  t.is(f.state.topologyEpoch, 2);
  t.deepEqual(f.state.rejected, t0.rejected);
});

test("holder binding: a transfer, release, base, obligation or persistence choice naming a holder of another volume is refused as holder_not_bound_to_volume", (t) => {
  let s = INITIAL_CONTROL_STATE;
  const apply = (b: ControlEventBody) => (s = applyControlEvent(s, eventOn(s, b)));
  for (const b of [admitHolder("h-w1", ["vol-a"]), admitHolder("h-e1", ["vol-a"]), admitHolder("h-e2", ["vol-b"]), obligation("vol-a", "l0", ["h-w1", "h-e1"]), obligation("vol-b", "l0", ["h-e2"])]) apply(b);
  const refused = (b: ControlEventBody) => {
    const before = s;
    const err = t.throws(() => applyControlEvent(s, eventOn(s, b)));
    t.is((err as ControlFenceError).code, ControlFenceCode.holder_not_bound_to_volume, `${b.type}: ${err?.message}`);
    t.is(s, before);
  };
  refused(transfer("t1", "vol-a-l0", "h-e1", "h-e2"));
  refused(release("vol-a-l0", "h-w1", ["h-e2"]));
  refused(release("vol-a-l0", "h-e2", ["h-w1"]));
  refused({ type: "release_to_base", obligationId: "vol-a-l0", holderId: "h-w1", ranges: RangeSet.of(1, 5), baseHolder: "h-e2", snapshotId: "snap", baseThroughSeq: 100 });
  refused(obligation("vol-a", "l1", ["h-w1", "h-e2"]));
  refused({ type: "choose_persistence", volume: "vol-a", lane: "l0", fromSeq: 1, targets: ["h-w1", "h-e2"], scenarios: [] });
  // A transfer prepared while the successor was bound is re-checked when activated (binding is per volume, never per transfer).
  apply(admitHolder("h-s1", ["vol-a"]));
  apply(transfer("t2", "vol-a-l0", "h-e1", "h-s1"));
  apply({ type: "activate_replacement", transferId: "t2" });
  t.true(s.obligations["vol-a-l0"]!.responsible["h-s1"]!.coversAll(RangeSet.of(1, 10)));
  // Binding only grows: naming another volume for a holder adds it.
  apply(admitHolder("h-e2", ["vol-a"], 2));
  t.deepEqual(s.holders["h-e2"]?.volumes, ["vol-a", "vol-b"]);
  apply(transfer("t3", "vol-a-l0", "h-e1", "h-e2"));
});

test("compatibility: v1 admissions (no volumes) are unscoped — such a controller commits for every volume, such a holder is bound to every volume", async (t) => {
  const store = new InMemoryControlLog("ctl");
  const f = new ControlLogFollower(store, undefined, trust);
  const old = signer("ctl-old");
  await commitControlEvent(store, f, { controller: "operator", clock, signer: operator }, () => ({ type: "admit_controller", controllerId: old.id, publicKey: old.publicKey }));
  const as = { controller: old.id, clock, signer: old };
  for (const b of [admitHolder("h-w1", undefined), admitHolder("h-e2", undefined), obligation("vol-a", "l0", ["h-w1"]), obligation("vol-b", "l0", ["h-e2"]), transfer("t", "vol-a-l0", "h-w1", "h-e2"), { type: "policy_change", topologyEpoch: 2, policyGeneration: 1, reason: "r" } as const]) {
    await commitControlEvent(store, f, as, () => b);
  }
  t.deepEqual(f.state.rejected, []);
  t.is(f.state.controllers?.["ctl-old"]?.volumes, undefined);
  t.is(f.state.holders["h-w1"]?.volumes, undefined);
  // Re-admitted with volumes (`custody bootstrap` run again), it is scoped: the unscoped holder in a
  // vol-a obligation may still be re-admitted by it (its events touch vol-a), the fence no longer.
  await commitControlEvent(store, f, { controller: "operator", clock, signer: operator }, () => ({ type: "admit_controller", controllerId: old.id, publicKey: old.publicKey, volumes: ["vol-a"] }));
  await commitControlEvent(store, f, as, () => admitHolder("h-w1", undefined, 2));
  t.is(f.state.holders["h-w1"]?.incarnation, 2);
  const err = await t.throwsAsync(commitControlEvent(store, f, as, () => ({ type: "policy_change", topologyEpoch: 3, policyGeneration: 1, reason: "r" })));
  t.is((err as ControlFenceError).code, ControlFenceCode.not_authorized_for_volume);
  t.deepEqual(eventScope(f.state, eventOn(f.state, admitHolder("h-old", undefined))), { every: true }, "a new unscoped holder touches every volume");
});

test("wire: v1 admission bodies keep their bytes; v2 bodies carry the volumes and round-trip", (t) => {
  const s = INITIAL_CONTROL_STATE;
  const v1: ControlEvent = eventOn(s, admitHolder("h-w1", undefined));
  const v2: ControlEvent = eventOn(s, admitHolder("h-w1", ["vol-a"]));
  t.deepEqual(decodeControlEvent(encodeControlEvent(v1)), v1);
  t.deepEqual(decodeControlEvent(encodeControlEvent(v2)), v2);
  t.true(encodeControlEvent(v2).byteLength > encodeControlEvent(v1).byteLength);
  const c1: ControlEvent = eventOn(s, { type: "admit_controller", controllerId: "ctl-1", publicKey: ctl1.publicKey });
  const c2: ControlEvent = eventOn(s, { type: "admit_controller", controllerId: "ctl-1", publicKey: ctl1.publicKey, volumes: ["vol-a"] });
  t.deepEqual(decodeControlEvent(encodeControlEvent(c1)), c1);
  t.deepEqual(decodeControlEvent(encodeControlEvent(c2)), c2);
  // An empty volume list or a volume that is not a token is malformed (never read as "unscoped").
  for (const bad of [{ ...c2, volumes: [] }, { ...c2, volumes: ["a.b"] }]) {
    t.is((t.throws(() => decodeControlEvent(encodeControlEvent(bad as ControlEvent))) as ControlFenceError).code, ControlFenceCode.malformed);
  }
});

/**
 * Regression (found by the demo after scoping landed: its holders serve two volumes with one
 * controller each, and no controller could re-admit a restarted holder, so writers never believed
 * its credits and one volume lost everything to the strike): a holder bound to two volumes is
 * re-admitted by a controller of either, provided the admission carries the holder's own signed
 * request for exactly that incarnation, key and domain, and names no volumes.
 */
test("a shared holder's re-admission it asked for itself is committed by a controller of any one of its volumes; without its signature, with another key or widening its volumes it is not", async (t) => {
  const store = new InMemoryControlLog("ctl");
  const f = new ControlLogFollower(store, undefined, trust);
  const as = (s: ControlSigner) => ({ controller: s.id, clock, signer: s });
  const ctl3 = signer("ctl-3");
  for (const [c, volume] of [[ctl1, "vol-a"], [ctl2, "vol-b"], [ctl3, "vol-c"]] as const) {
    await commitControlEvent(store, f, as(operator), () => ({ type: "admit_controller", controllerId: c.id, publicKey: c.publicKey, volumes: [volume] }));
  }
  const shared = generateHolderKeyPair();
  const domain = "east/az-1/host-s";
  const admit = (incarnation: number, extra: Partial<ControlEventOf<"admit_holder">> = {}): ControlEventBody => ({ type: "admit_holder", holderId: "h-s", incarnation, publicKey: shared.publicKey, failureDomain: domain, ...extra });
  await commitControlEvent(store, f, as(operator), () => admit(1, { volumes: ["vol-a", "vol-b"] }));
  const asked = (incarnation: number, key = shared) => encodeAdmissionRequest({ holderId: "h-s", incarnation, publicKey: key.publicKey, failureDomain: domain, at: 1 }, key.privateKey);

  // No signature of the holder's: vol-a's lease on h-s is not ctl-2's to take.
  let s = await appendAs(store, f, ctl2, admit(2));
  t.is(s.holders["h-s"]!.incarnation, 1);
  t.is(s.rejected.at(-1)!.code, ControlFenceCode.not_authorized_for_volume);
  // A request signed by another key, or for another incarnation, vouches for nothing.
  const other = generateHolderKeyPair();
  for (const request of [asked(2, other), asked(3)]) {
    s = await appendAs(store, f, ctl2, admit(2, { request }));
    t.is(s.holders["h-s"]!.incarnation, 1);
    t.is(s.rejected.at(-1)!.code, ControlFenceCode.not_authorized_for_volume);
  }
  // A controller of a volume the holder does not serve cannot, even with the holder's request.
  s = await appendAs(store, f, ctl3, admit(2, { request: asked(2) }));
  t.is(s.holders["h-s"]!.incarnation, 1);
  t.is(s.rejected.at(-1)!.code, ControlFenceCode.not_authorized_for_volume);
  // The holder's own request: either controller of its volumes commits it, binding unchanged.
  s = (await commitControlEvent(store, f, as(ctl2), () => admit(2, { request: asked(2) }))).state;
  t.is(s.holders["h-s"]!.incarnation, 2);
  t.deepEqual(s.holders["h-s"]!.volumes, ["vol-a", "vol-b"]);
  s = (await commitControlEvent(store, f, as(ctl1), () => admit(3, { request: asked(3) }))).state;
  t.is(s.holders["h-s"]!.incarnation, 3);
  // Naming volumes beside the request is not a v3 body at all.
  t.throws(() => encodeControlEvent(eventOn(s, admit(4, { request: asked(4), volumes: ["vol-c"] }), "ctl-2")), { instanceOf: ControlFenceError });
  // The v3 body round-trips.
  const e = eventOn(s, admit(4, { request: asked(4) }), "ctl-2");
  t.deepEqual(decodeControlEvent(encodeControlEvent(e)), e);
});
