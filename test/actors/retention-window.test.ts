import test from "ava";
import { heldByRetention, retentionFloor } from "../../actors/controller/retention-window.ts";
import { foldCommitHistory } from "../../policies/commit-log.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { CommitHistory } from "../../actors/controller/commit-history.ts";
import type { VolumeTopology } from "../../actors/controller/controller-config.ts";
import { buildEvaluationState, releaseCandidates } from "../../actors/controller/evaluation-input.ts";
import type { Holding } from "../../custody/receipt-ledger.ts";

const commits = [
  { lane: "l0", first: 1, last: 10, committedAtMs: 1_000, bytesPerSeq: 10 },
  { lane: "l0", first: 11, last: 20, committedAtMs: 5_000, bytesPerSeq: 10 },
];
const w = { windowMs: 3_000 };

test("only sequences committed within the window are held, until the newest of them leaves it", (t) => {
  t.deepEqual(heldByRetention(w, commits, "l0", RangeSet.of(1, 20), 6_000, -Infinity), { held: RangeSet.of(11, 20), untilMs: 8_000 });
  t.true(heldByRetention(w, commits, "l0", RangeSet.of(1, 20), 8_000, -Infinity).held.isEmpty, "the window is over at commit + window");
});

test("a sequence without a known commit time is held as if committed when the controller started, never taken as old", (t) => {
  const r = heldByRetention(w, commits, "l0", RangeSet.of(21, 25), 6_000, 4_000);
  t.deepEqual(r, { held: RangeSet.of(21, 25), untilMs: 7_000 });
});

test("commit history inside the window is never folded (a fold keeps the oldest time and would end the window early)", (t) => {
  const floor = retentionFloor(w, commits, ["l0"], 6_000);
  t.deepEqual(floor, { l0: 10 });
  const folded = foldCommitHistory(commits, { l0: Math.min(20, floor.l0!) }, { l0: 0 }, 1_000);
  t.is(folded.find((c) => c.first <= 15 && 15 <= c.last)!.committedAtMs, 5_000);
});

test("a sequence no commit run dates yet takes the time it was first seen retained, and a run that dates it later wins", (t) => {
  const sightings = [{ lane: "l0", first: 21, last: 25, committedAtMs: 5_500, bytesPerSeq: 0 }];
  t.deepEqual(heldByRetention(w, commits, "l0", RangeSet.of(1, 25), 6_000, -Infinity, sightings), { held: RangeSet.of(11, 25), untilMs: 8_500 });
  t.true(heldByRetention(w, commits, "l0", RangeSet.of(21, 25), 8_500, -Infinity, sightings).held.isEmpty, "seen at 5.5 s, committed by then: old at 8.5 s");
  const dated = [...commits, { lane: "l0", first: 21, last: 25, committedAtMs: 5_200, bytesPerSeq: 10 }];
  t.deepEqual(heldByRetention(w, dated, "l0", RangeSet.of(21, 25), 6_000, -Infinity, sightings), { held: RangeSet.of(21, 25), untilMs: 8_200 });
});

test("commit sightings keep the first time a sequence was seen and are forgotten once a run dates them or nobody retains them", (t) => {
  const h = new CommitHistory();
  h.add({ lane: "l0", first: 1, last: 10, committedAtMs: 1_000, bytesPerSeq: 10 });
  h.sight("l0", RangeSet.of(1, 15), 2_000);
  h.sight("l0", RangeSet.of(1, 20), 3_000);
  t.deepEqual(h.sightings.runs.map((s) => [s.first, s.last, s.committedAtMs]), [[11, 15, 2_000], [16, 20, 3_000]]);
  h.add({ lane: "l0", first: 11, last: 13, committedAtMs: 1_500, bytesPerSeq: 10 });
  h.sightings.prune(() => RangeSet.of(1, 13), { l0: 15 });
  t.deepEqual(h.sightings.runs.map((s) => [s.first, s.last, s.committedAtMs]), [[15, 15, 2_000], [16, 20, 3_000]]);
  h.sight("l0", RangeSet.of(15, 20), 9_000);
  t.is(h.sightings.runs.length, 2, "a sequence already seen keeps its first sighting");
  h.sight("l0", RangeSet.of(14, 20), 9_000);
  t.deepEqual(h.sightings.runs.at(-1), { lane: "l0", first: 14, last: 14, committedAtMs: 9_000, bytesPerSeq: 0 }, "one retained again after it was forgotten is seen anew");
});

// The controller started long before the writes; the holders' receipts for 41..60 reach it before
// the periodic writer-progress message that dates them (they travel on other subjects and routes).
const START = 1_000_000;
const topo: VolumeTopology = {
  volume: "v",
  lanes: ["l0"],
  writerSite: "src",
  sites: [
    { id: "src", region: "r1", az: "a1", host: "hs", deps: [] },
    { id: "s1", region: "r1", az: "a2", host: "h1", deps: [] },
    { id: "s2", region: "r2", az: "b1", host: "h2", deps: [] },
  ],
  holderSites: { h1: "s1", h2: "s2" },
  bases: [{ id: "genesis", holder: "h2", cut: { l0: 0 }, bytes: 0 }],
  keyAuthorities: [{ id: "ka", site: "s2" }],
  links: [],
  recovery: { destination: "s2", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
  scenarios: [],
  timelines: [],
  staleAfterMs: 60_000,
  releasable: ["h1"],
  retention: { windowMs: 2_000, holders: ["h1"] },
};
const ramHolding = (holderId: string, ranges: RangeSet, atMs: number): Holding =>
  ({ holderId, incarnation: 1, volume: "v", lane: "l0", obligationId: "v-l0", residency: "ram", retained: ranges, issuedAt: atMs, evidenceAt: atMs, stale: false, receipt: { payload: { manifest: { baseSnapshots: [] } } } }) as unknown as Holding;

/**
 * What the controller would ask to release of h1 at `asOfMs`: it sights what is retained first, as
 * ControllerCore.currentState does (the old fallback, the controller's start, is kept: the
 * sightings alone must keep the undated sequences).
 */
function h1Candidates(history: CommitHistory, asOfMs: number): RangeSet {
  const holdings = [ramHolding("h1", RangeSet.of(1, 60), asOfMs), ramHolding("h2", RangeSet.of(1, 60), asOfMs)];
  for (const h of holdings) history.sight(h.lane, h.retained, asOfMs);
  const state = buildEvaluationState(topo, holdings, { heads: { l0: 60 }, commits: history.runs }, asOfMs, new Set(), { retentionUnknownCommittedAtMs: START, retentionSightings: history.sightings.runs });
  return releaseCandidates(state, ["h1"]).reduce((r, c) => r.union(c.ranges), RangeSet.EMPTY);
}

test("seq 41 released at <asOf>, committed Infinity: receipts that reach the controller before the writer progress dating them never make a retention window release early", (t) => {
  const written = START + 10_000;
  const history = new CommitHistory();
  history.add({ lane: "l0", first: 1, last: 40, committedAtMs: written, bytesPerSeq: 4096 });
  // Dating the undated 41..60 by the controller's start (the bug) offered them for release at once.
  const holdings = [ramHolding("h1", RangeSet.of(1, 60), written + 100), ramHolding("h2", RangeSet.of(1, 60), written + 100)];
  const buggy = buildEvaluationState(topo, holdings, { heads: { l0: 60 }, commits: history.runs }, written + 100, new Set(), { retentionUnknownCommittedAtMs: START });
  t.deepEqual(releaseCandidates(buggy, ["h1"]).map((c) => c.ranges.toJSON()), [[[41, 60]]], "the bug: undated sequences counted as committed at controller start");
  // 100 ms after the writes: 1..40 are dated and inside the window, 41..60 are seen but undated.
  t.true(h1Candidates(history, written + 100).isEmpty, "nothing inside the window is offered");
  // The window after 1..40's commit has passed; 41..60 were committed no earlier than seen.
  t.deepEqual(h1Candidates(history, written + 2_000).toJSON(), [[1, 40]]);
  // The progress message arrives: its commit time for 41..60 holds them until that time plus the window.
  history.add({ lane: "l0", first: 41, last: 60, committedAtMs: written + 50, bytesPerSeq: 4096 });
  t.deepEqual(h1Candidates(history, written + 2_049).toJSON(), [[1, 40]]);
  t.deepEqual(h1Candidates(history, written + 2_050).toJSON(), [[1, 60]]);
});
