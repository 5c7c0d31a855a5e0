import test from "ava";
import { RangeSet } from "../../lanes/range-set.ts";
import { LossKind, type Scenario, type Site } from "../../policies/index.ts";
import {
  checkCredits,
  checkHolds,
  checkReceipts,
  checkReleaseCoverage,
  checkReleased,
  checkReleasesCommitted,
  checkStrike,
  InvariantId,
  survivingCut,
  type HolderTruth,
  type HoldTruth,
  type WorldObservation,
} from "../../sim/invariants.ts";

const site = (id: string, az: string): Site => ({ id, region: "r1", az, host: `host-${id}`, deps: [] });
const sites = [site("sa", "az1"), site("sb", "az2")];
const holder = (id: string, s: string, over: Partial<HolderTruth> = {}): HolderTruth => ({
  id,
  site: s,
  ram: RangeSet.EMPTY,
  disk: RangeSet.EMPTY,
  ramSurvivesPower: false,
  released: RangeSet.EMPTY,
  ledger: RangeSet.EMPTY,
  granted: RangeSet.EMPTY,
  committed: RangeSet.EMPTY,
  ...over,
});
const obs = (holders: HolderTruth[], extra: Partial<WorldObservation> = {}): WorldObservation => ({ atMs: 5, holders, credits: [], receipts: [], holds: [], ...extra });
const crashA: Scenario = { name: "crash:a", losses: [{ domain: "host:host-sa", kind: LossKind.crash }], deadlineSec: 60, required: true };
const destroyA: Scenario = { name: "destroy:az1", losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }], deadlineSec: 60, required: true };

test("the surviving cut keeps disk through a crash, protected RAM only with evidence, nothing through destruction", (t) => {
  const a = holder("a", "sa", { ram: RangeSet.of(6, 9), disk: RangeSet.of(0, 5) });
  t.is(survivingCut([a], sites, crashA.losses), 5);
  t.is(survivingCut([{ ...a, ramSurvivesPower: true }], sites, crashA.losses), 9);
  t.is(survivingCut([a], sites, destroyA.losses), -1);
  t.is(survivingCut([a, holder("b", "sb", { ram: RangeSet.of(0, 7) })], sites, destroyA.losses), 7);
});

test("a strike that loses a confirmed write is a lost_confirmed_write violation; one that keeps it is not", (t) => {
  const holders = [holder("a", "sa", { disk: RangeSet.of(0, 9) }), holder("b", "sb", { ram: RangeSet.of(0, 4) })];
  t.deepEqual(checkStrike(obs(holders), sites, destroyA, 4), []);
  t.deepEqual(checkStrike(obs(holders), sites, destroyA, undefined), [], "nothing confirmed, nothing to check");
  const v = checkStrike(obs(holders), sites, destroyA, 6);
  t.is(v[0]?.invariant, InvariantId.lostConfirmedWrite);
  t.deepEqual(v[0]?.detail, { scenario: "destroy:az1", confirmed: 6, surviving: 4 });
});

test("release coverage counts granted ranges as gone even before the holder applies them", (t) => {
  const holders = [holder("a", "sa", { disk: RangeSet.of(0, 9) }), holder("b", "sb", { ram: RangeSet.of(0, 9), granted: RangeSet.of(0, 3) })];
  const v = checkReleaseCoverage(obs(holders), sites, [destroyA], new Map([["destroy:az1", 9]]));
  t.is(v[0]?.invariant, InvariantId.releaseUncovered);
  t.deepEqual(checkReleaseCoverage(obs(holders), sites, [crashA], new Map([["crash:a", 9]])), []);
});

test("a receipt claiming ranges its holder does not hold is a receipt_overclaim", (t) => {
  const ok = { holder: "a", claimed: RangeSet.of(0, 3), held: RangeSet.of(0, 5) };
  const bad = { holder: "a", claimed: RangeSet.of(0, 7), held: RangeSet.of(0, 5) };
  t.deepEqual(checkReceipts(obs([], { receipts: [ok] })), []);
  t.is(checkReceipts(obs([], { receipts: [bad] }))[0]?.invariant, InvariantId.receiptOverclaim);
});

test("a released range held again, or claimed again in the ledger, is released_reappeared", (t) => {
  t.deepEqual(checkReleased(obs([holder("a", "sa", { ram: RangeSet.of(5, 9), released: RangeSet.of(0, 4) })])), []);
  t.is(checkReleased(obs([holder("a", "sa", { ram: RangeSet.of(3, 9), released: RangeSet.of(0, 4) })]))[0]?.invariant, InvariantId.releasedReappeared);
  t.is(checkReleased(obs([holder("a", "sa", { ledger: RangeSet.of(0, 9), granted: RangeSet.of(2, 2) })]))[0]?.invariant, InvariantId.releasedReappeared);
});

test("sending more units than granted credits is credit_exceeded", (t) => {
  const c = { sender: "w", receiver: "a", inc: 1, sent: 8, maxGranted: 8 };
  t.deepEqual(checkCredits(obs([], { credits: [c] })), []);
  t.is(checkCredits(obs([], { credits: [{ ...c, sent: 9 }] }))[0]?.invariant, InvariantId.creditExceeded);
});

test("a holder releasing a range a standing hold binds it to keep is held_range_released, unless the log released it before the hold", (t) => {
  const pin: HoldTruth = { holdId: "pin-a", ranges: RangeSet.of(10, 20), holders: ["a"], releasedBefore: { a: RangeSet.of(1, 12) } };
  const everyone: HoldTruth = { holdId: "rec-1", ranges: RangeSet.of(30, 40), holders: [], releasedBefore: {} };
  const ok = [holder("a", "sa", { released: RangeSet.of(1, 12) }), holder("b", "sb", { released: RangeSet.of(1, 25) })];
  t.deepEqual(checkHolds(obs(ok, { holds: [pin, everyone] })), [], "released before the pin, or at a holder it does not bind");
  const v = checkHolds(obs([holder("a", "sa", { released: RangeSet.of(1, 15) })], { holds: [pin] }));
  t.is(v[0]?.invariant, InvariantId.heldRangeReleased);
  t.deepEqual(v[0]?.detail, { holder: "a", holdId: "pin-a", ranges: [[13, 15]] });
  const all = checkHolds(obs([holder("b", "sb", { released: RangeSet.of(1, 30) })], { holds: [pin, everyone] }));
  t.deepEqual(all.map((x) => x.detail["holdId"]), ["rec-1"], "a hold naming no holder binds them all");
  t.deepEqual(checkHolds(obs([holder("a", "sa", { released: RangeSet.of(1, 15) })])), [], "once the hold ended nothing is held");
});

test("a holder releasing more than the control log released at it is release_beyond_log", (t) => {
  t.deepEqual(checkReleasesCommitted(obs([holder("a", "sa", { released: RangeSet.of(1, 9), committed: RangeSet.of(1, 12) })])), []);
  const v = checkReleasesCommitted(obs([holder("a", "sa", { released: RangeSet.of(1, 9), committed: RangeSet.of(1, 5) }), holder("b", "sb")]));
  t.is(v.length, 1);
  t.is(v[0]?.invariant, InvariantId.releaseBeyondLog);
  t.deepEqual(v[0]?.detail, { holder: "a", ranges: [[6, 9]] });
});
