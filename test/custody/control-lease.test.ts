/**
 * Control leases (issue #45): one active controller per volume, decided by the control log. Pure
 * fold tests over an in-memory log: claims and terms, renewals, the refusal of a deposed
 * controller's events (appended straight to the store, as a controller that skipped its own
 * pre-check would), and never two holders in one term.
 */
import test from "ava";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlFenceCode, ControlFenceError } from "../../custody/control-error.ts";
import { decodeControlEvent, encodeControlEvent, type ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import { leaseOf } from "../../custody/control-lease.ts";
import { foldControlLog, INITIAL_CONTROL_STATE, isReleaseAuthorized, type ControlState } from "../../custody/control-state.ts";
import type { ControlSigner, ControlTrust } from "../../custody/control-trust.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { admit, clock, createOb, eventOn, release } from "./control-fixtures.ts";

const claim = (term: number, volume = "vol1"): ControlEventBody => ({ type: "claim_lease", volume, term, renewMs: 1_000, timeoutMs: 5_000 });
const renew = (term: number, volume = "vol1"): ControlEventBody => ({ type: "renew_lease", volume, term });

/** A log with holders h1, h2 responsible for ob1 (vol1), committed by an operator. */
async function world(): Promise<{ store: InMemoryControlLog; f: ControlLogFollower }> {
  const store = new InMemoryControlLog("r");
  const f = new ControlLogFollower(store);
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(store, f, { controller: "operator", clock }, () => b);
  return { store, f };
}

/** Appends `body` by `controller` prepared on the current head, without the committer's pre-check. */
async function appendRaw(store: InMemoryControlLog, controller: string, body: ControlEventBody): Promise<ControlState> {
  const s = foldControlLog(await store.readAll());
  await store.append(eventOn(s, body, controller), s.lastSeq);
  return foldControlLog(await store.readAll());
}

test("claim_lease and renew_lease bodies round-trip their canonical bytes", (t) => {
  for (const body of [claim(7), renew(7)]) {
    const e = eventOn(INITIAL_CONTROL_STATE, body);
    t.deepEqual(decodeControlEvent(encodeControlEvent(e)), e);
  }
});

test("a log without claims folds as before: every controller commits, no lease is recorded", async (t) => {
  const { store, f } = await world();
  await commitControlEvent(store, f, { controller: "ctl-a", clock }, () => release("h1", 1, 5, ["h2"]));
  const s = foldControlLog(await store.readAll());
  t.is(s.leases, undefined);
  t.deepEqual(s.rejected, []);
  t.true(isReleaseAuthorized(s, "ob1", "h1", RangeSet.of(1, 5)));
});

test("a claim makes its author the holder; terms strictly increase; the lease records its claim and heartbeats", async (t) => {
  const { store } = await world();
  let s = await appendRaw(store, "ctl-a", claim(1));
  t.like(leaseOf(s, "vol1"), { holder: "ctl-a", term: 1, renewMs: 1_000, timeoutMs: 5_000, sinceSeq: s.lastSeq, heartbeatSeq: s.lastSeq });
  s = await appendRaw(store, "ctl-b", claim(1));
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.stale_term, "a second claim of term 1 is refused: one holder per term");
  t.is(leaseOf(s, "vol1")?.holder, "ctl-a");
  s = await appendRaw(store, "ctl-a", renew(1));
  t.is(leaseOf(s, "vol1")?.heartbeatSeq, s.lastSeq, "a renewal is a heartbeat");
  s = await appendRaw(store, "ctl-a", release("h1", 1, 5, ["h2"]));
  t.is(leaseOf(s, "vol1")?.heartbeatSeq, s.lastSeq, "any accepted commit of the holder is a heartbeat");
  s = await appendRaw(store, "ctl-b", claim(3));
  t.like(leaseOf(s, "vol1"), { holder: "ctl-b", term: 3 });
  s = await appendRaw(store, "ctl-a", claim(2));
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.stale_term, "a lower term never comes back");
  t.is(leaseOf(s, "vol1")?.holder, "ctl-b");
});

test("a deposed controller's events are refused not_lease_holder, counted, and change nothing", async (t) => {
  const { store } = await world();
  await appendRaw(store, "ctl-a", claim(1));
  await appendRaw(store, "ctl-b", claim(2));
  const before = foldControlLog(await store.readAll());
  let s = await appendRaw(store, "ctl-a", release("h1", 1, 5, ["h2"]));
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.not_lease_holder);
  t.false(isReleaseAuthorized(s, "ob1", "h1", RangeSet.of(1, 5)), "the deposed controller's release released nothing");
  t.is(leaseOf(s, "vol1")?.heartbeatSeq, leaseOf(before, "vol1")?.heartbeatSeq, "a refused entry is no heartbeat");
  s = await appendRaw(store, "ctl-a", renew(1));
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.not_lease_holder, "nor may it renew the lease it lost");
  s = await appendRaw(store, "ctl-b", renew(1));
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.stale_term, "the holder renews its own term only");
  s = await appendRaw(store, "ctl-b", release("h1", 1, 5, ["h2"]));
  t.true(isReleaseAuthorized(s, "ob1", "h1", RangeSet.of(1, 5)), "the holder's release counts");
  t.deepEqual(s.rejected.map((r) => r.code), [ControlFenceCode.not_lease_holder, ControlFenceCode.not_lease_holder, ControlFenceCode.stale_term]);
});

test("commitControlEvent refuses a deposed controller's event before it reaches the log", async (t) => {
  const { store, f } = await world();
  await commitControlEvent(store, f, { controller: "ctl-a", clock }, () => claim(1));
  await commitControlEvent(store, f, { controller: "ctl-b", clock }, () => claim(2));
  const last = await store.lastSeq();
  const err = await t.throwsAsync(commitControlEvent(store, f, { controller: "ctl-a", clock }, () => release("h1", 1, 5, ["h2"])), { instanceOf: ControlFenceError });
  t.is(err?.code, ControlFenceCode.not_lease_holder);
  t.is(await store.lastSeq(), last);
});

test("operators (authors that are neither admitted nor claimants) are not fenced by leases; other volumes stay unleased", async (t) => {
  const { store } = await world();
  await appendRaw(store, "ctl-a", claim(1));
  let s = await appendRaw(store, "operator", { type: "hold_ranges", holdId: "pin", kind: "pitr_pin", volume: "vol1", lane: "l0", ranges: RangeSet.of(100, 200), holders: [], untilMs: 0, by: "op" });
  t.deepEqual(s.rejected, []);
  t.truthy(s.holds["pin"]);
  s = await appendRaw(store, "ctl-b", { type: "create_obligation", obligationId: "ob2", volume: "vol2", lane: "l0", representation: "raw", holders: ["h1"], fromSeq: 1 });
  t.deepEqual(s.rejected, [], "vol2 has no lease: any controller commits for it");
  s = await appendRaw(store, "ctl-a", { type: "policy_change", topologyEpoch: 2, policyGeneration: 1, reason: "x" });
  t.deepEqual(s.rejected, [], "the holder of every leased volume may touch every volume");
  s = await appendRaw(store, "ctl-b", claim(1, "vol2"));
  s = await appendRaw(store, "ctl-a", { type: "policy_change", topologyEpoch: 3, policyGeneration: 1, reason: "y" });
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.not_lease_holder, "an event touching every volume needs every lease");
});

test("claims are checked: timings, and admission for the volume", async (t) => {
  const { store } = await world();
  let s = await appendRaw(store, "ctl-a", { type: "claim_lease", volume: "vol1", term: 1, renewMs: 5_000, timeoutMs: 5_000 });
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.malformed);
  const kp = generateHolderKeyPair();
  await appendRaw(store, "operator", { type: "admit_controller", controllerId: "ctl-c", publicKey: kp.publicKey, volumes: ["vol2"] });
  s = await appendRaw(store, "ctl-c", claim(1));
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.not_authorized_for_volume);
  t.is(leaseOf(s, "vol1"), undefined);
});

test("an admitted controller that never claimed is fenced once its volume is leased", async (t) => {
  const { store } = await world();
  const kp = generateHolderKeyPair();
  await appendRaw(store, "operator", { type: "admit_controller", controllerId: "ctl-old", publicKey: kp.publicKey, volumes: ["vol1"] });
  await appendRaw(store, "ctl-a", claim(1));
  const s = await appendRaw(store, "ctl-old", release("h1", 1, 5, ["h2"]));
  t.is(s.rejected.at(-1)?.code, ControlFenceCode.not_lease_holder);
});

test("signed log: a deposed controller's correctly signed event is refused not_lease_holder", async (t) => {
  const mk = (id: string): ControlSigner & { publicKey: Uint8Array } => ({ id, ...generateHolderKeyPair() });
  const op = mk("operator");
  const a = mk("ctl-a");
  const b = mk("ctl-b");
  const trust: ControlTrust = { operators: { operator: publicKeyFromRaw(op.publicKey) } };
  const store = new InMemoryControlLog("r");
  const f = new ControlLogFollower(store, undefined, trust);
  const as = (s: ControlSigner) => ({ controller: s.id, clock, signer: s });
  for (const c of [a, b]) await commitControlEvent(store, f, as(op), () => ({ type: "admit_controller", controllerId: c.id, publicKey: c.publicKey, volumes: ["vol1"] }));
  for (const body of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"])]) await commitControlEvent(store, f, as(op), () => body);
  await commitControlEvent(store, f, as(a), () => claim(1));
  await commitControlEvent(store, f, as(b), () => claim(2));
  const s = f.state;
  await store.append(eventOn(s, release("h1", 1, 5, ["h2"]), "ctl-a"), s.lastSeq, a);
  const after = await f.refresh();
  t.is(after.rejected.at(-1)?.code, ControlFenceCode.not_lease_holder);
  t.false(isReleaseAuthorized(after, "ob1", "h1", RangeSet.of(1, 5)));
});

test("random claim races never give one term two holders, and every accepted commit comes from its term's holder", async (t) => {
  let seed = 42;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), (seed >>> 16) % n);
  const { store } = await world();
  const ctls = ["ctl-a", "ctl-b", "ctl-c"];
  for (let i = 0; i < 200; i++) {
    const who = ctls[rnd(3)]!;
    const s = foldControlLog(await store.readAll());
    const term = leaseOf(s, "vol1")?.term ?? 0;
    const body = rnd(3) === 0 ? claim(term + rnd(2)) : rnd(2) === 0 ? renew(term) : ({ type: "hold_ranges", holdId: `p${i}`, kind: "pitr_pin", volume: "vol1", lane: "l0", ranges: RangeSet.of(1, 2), holders: [], untilMs: 0, by: who } as ControlEventBody);
    await appendRaw(store, who, body);
  }
  const entries = await store.readAll();
  let s = INITIAL_CONTROL_STATE;
  const holderOfTerm = new Map<number, string>();
  for (const e of entries) {
    const before = s.rejected.length;
    // An author that never claimed (and was not admitted) is no controller to the unsigned fold: not fenced.
    const claimant = s.leases?.claimants.includes(e.event.controller) === true || e.event.type === "claim_lease";
    s = foldControlLog([e], s);
    if (s.rejected.length > before || !claimant) continue;
    const lease = leaseOf(s, "vol1");
    if (lease === undefined) continue;
    t.is(e.event.controller, lease.holder, `accepted entry ${e.seq} comes from the holder of term ${lease.term}`);
    const prev = holderOfTerm.get(lease.term);
    t.true(prev === undefined || prev === lease.holder, `term ${lease.term} has one holder`);
    holderOfTerm.set(lease.term, lease.holder);
  }
  t.true(holderOfTerm.size > 3);
});
