/**
 * The controller's commit history (what each write cost and when it was committed) stays as large
 * as what is retained and unprotected, not as old as the volume: evaluation after ten times more
 * history sees the same input and gives the same report.
 */
import test from "ava";
import { commitHistoryBounds, evaluateState, foldCommitHistory, tallyCommits } from "../../policies/index.ts";
import type { CommitRun, EvaluationState } from "../../policies/evaluation-state.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { exampleState } from "./worked-example-fixture.ts";

const COARSE = 65_536;
const shift = (ranges: number[][], by: number) => ranges.map(([a, b]) => [a! + by, b! + by]);

/** The memo's worked example moved `by` sequences later: same retained window, `by` more writes behind it. */
function exampleAfter(by: number, commits: readonly CommitRun[]): EvaluationState {
  return exampleState((j) => {
    j.asOfMs += by;
    j.source.lanes.l0 += by;
    for (const h of j.holders) for (const c of h.claims) {
      c.ranges = shift(c.ranges, by);
      c.evidence.atMs += by;
    }
    for (const b of j.bases) b.cut.l0 += by;
    for (const f of j.forwards) f.ranges = shift(f.ranges, by);
    j.commits = commits;
  });
}

/** Per-write history 1..head (one run per write, 1 ms apart), folded every `every` writes as the controller does. */
function grow(head: number, every: number): CommitRun[] {
  let runs: CommitRun[] = [];
  for (let seq = 1; seq <= head; seq++) {
    runs.push({ lane: "l0", first: seq, last: seq, committedAtMs: 1_767_225_480_000 + seq, bytesPerSeq: 4_194_304 });
    if (seq % every === 0 || seq === head) {
      const s = exampleAfter(seq - 120, runs);
      const { floor, horizon } = commitHistoryBounds(s, evaluateState(s), ["l0"]);
      runs = foldCommitHistory(runs, floor, horizon, COARSE);
    }
  }
  return runs;
}

test("commit history below every cut and below everything retained folds into one run; above the lowest cut it stays per write", (t) => {
  const runs: CommitRun[] = Array.from({ length: 200_000 }, (_, i) => ({ lane: "l0", first: i + 1, last: i + 1, committedAtMs: i, bytesPerSeq: 100 }));
  const folded = foldCommitHistory(runs, { l0: 199_990 }, { l0: 150_001 }, COARSE);
  // 1..150,000 in one run; 150,001..199,990 in one coarse run (under 65,536); 199,991..200,000 exact.
  t.deepEqual(folded.slice(0, 2).map((r) => [r.first, r.last]), [[1, 150_000], [150_001, 199_990]]);
  t.is(folded.length, 2 + 10);
  t.deepEqual(folded.slice(2).map((r) => r.first), Array.from({ length: 10 }, (_, i) => 199_991 + i));
  // Bytes and the oldest commit time of any range are what the per-write history says.
  for (const r of [RangeSet.of(1, 200_000), RangeSet.of(199_995, 200_000), RangeSet.of(150_001, 199_990)]) {
    const a = tallyCommits(runs, "l0", r);
    const b = tallyCommits(folded, "l0", r);
    t.is(b.bytes, a.bytes, `bytes of ${r}`);
    t.is(b.oldestCommittedAtMs, a.oldestCommittedAtMs, `oldest commit of ${r}`);
  }
  // Without a horizon (something still retains sequence 1) the fold stops at coarse runs.
  t.is(foldCommitHistory(runs, { l0: 199_990 }, { l0: 1 }, COARSE).length, Math.ceil(199_990 / COARSE) + 10);
});

test("a lane no scenario protects keeps its history exact; a scenario that keeps nothing does not stop the others' fold", (t) => {
  const runs: CommitRun[] = Array.from({ length: 50 }, (_, i) => ({ lane: "l0", first: i + 1, last: i + 1, committedAtMs: i, bytesPerSeq: 1 }));
  t.is(foldCommitHistory(runs, { l0: 0 }, { l0: 0 }, COARSE).length, 50);
  // The worked example plus a scenario losing every site: the floor is still the lowest cut kept.
  const s = exampleAfter(0, runs);
  const report = evaluateState(s);
  const everything = { ...report, reports: [...report.reports, { ...report.reports[0]!, name: "all lost", cut: null }] };
  t.deepEqual(commitHistoryBounds(s, everything, ["l0"]).floor, { l0: 118 });
});

test("evaluation after ten times more history sees the same commit runs and gives the same report", (t) => {
  const small = 2_000;
  const large = 20_000;
  const a = grow(small, 100);
  const b = grow(large, 100);
  t.is(b.length, a.length, `commit runs after ${small} writes: ${a.length}; after ${large}: ${b.length}`);
  t.true(a.length <= 25, `history is what is unprotected plus one folded run (${a.length} runs)`);
  const ra = evaluateState(exampleAfter(small - 120, a));
  const rb = evaluateState(exampleAfter(large - 120, b));
  t.is(ra.reports.length, rb.reports.length);
  for (let i = 0; i < ra.reports.length; i++) {
    const x = ra.reports[i]!;
    const y = rb.reports[i]!;
    t.is(y.name, x.name);
    t.is((y.cut?.["l0"] ?? 0) - (x.cut?.["l0"] ?? 0), x.cut === null ? 0 : large - small, `${x.name}: the cut moved with the writes`);
    t.is(y.lostSeqs, x.lostSeqs, `${x.name}: same writes at risk`);
    t.is(y.lostBytes, x.lostBytes, `${x.name}: same bytes at risk`);
    t.is(y.oldestLostAgeMs, x.oldestLostAgeMs, `${x.name}: same age of the oldest loss`);
    t.deepEqual(y.timeToUsable, x.timeToUsable, `${x.name}: same recovery time`);
  }
});
