import { RangeSet } from "../lanes/index.ts";
import type { CommitRun, EvaluationState } from "./evaluation-state.ts";

/** Bytes and oldest commit time of some sequences, from the source's commit runs. */
export interface CommitTally {
  readonly seqs: number;
  readonly bytes: number;
  /** Sequences with no commit run: their bytes and age are unknown (not guessed). */
  readonly unknownSeqs: number;
  /** Earliest source commit timestamp among the sequences, or null when none is known. */
  readonly oldestCommittedAtMs: number | null;
}

/** Tallies `ranges` of `lane` against the commit runs. Pure; overlapping runs are counted once. */
export function tallyCommits(commits: readonly CommitRun[], lane: string, ranges: RangeSet): CommitTally {
  let bytes = 0;
  let known = RangeSet.EMPTY;
  let oldest: number | null = null;
  for (const run of commits) {
    if (run.lane !== lane) continue;
    const part = RangeSet.of(run.first, run.last).intersect(ranges).subtract(known);
    if (part.isEmpty) continue;
    known = known.union(part);
    bytes += part.count * run.bytesPerSeq;
    if (oldest === null || run.committedAtMs < oldest) oldest = run.committedAtMs;
  }
  // Folded runs carry an average size per sequence: totals are whole bytes.
  return {
    seqs: ranges.count,
    bytes: Math.round(bytes),
    unknownSeqs: ranges.count - known.count,
    oldestCommittedAtMs: oldest,
  };
}

/**
 * Folds commit history that no report needs per write. What a scenario would lose (and how old it
 * is) lies above its cut, so runs above `floor` (each lane's lowest cut over all scenarios) stay
 * exact. Below it only bytes still matter, for the transfer a recovery would make: runs are folded
 * into coarse runs of up to `coarseSeqs` with the same total bytes. Below `horizon` (the lowest
 * sequence any holder still retains) no recovery can transfer anything, so everything there folds
 * into one run. The result's length then depends on what is retained and unprotected, not on age.
 * Pure.
 */
export function foldCommitHistory(
  runs: readonly CommitRun[],
  floor: Readonly<Record<string, number>>,
  horizon: Readonly<Record<string, number>>,
  coarseSeqs: number,
): CommitRun[] {
  const out: CommitRun[] = [];
  for (const c of runs) {
    const f = floor[c.lane] ?? 0;
    const prev = out[out.length - 1];
    const foldable =
      c.last <= f && prev !== undefined && prev.lane === c.lane && prev.last <= f && prev.last + 1 === c.first;
    const unneeded = c.last < (horizon[c.lane] ?? 0);
    if (!foldable || (!unneeded && c.last - prev.first >= coarseSeqs)) {
      out.push(c);
      continue;
    }
    const n1 = prev.last - prev.first + 1;
    const n2 = c.last - c.first + 1;
    out[out.length - 1] = {
      lane: c.lane,
      first: prev.first,
      last: c.last,
      committedAtMs: Math.min(prev.committedAtMs, c.committedAtMs),
      bytesPerSeq: (prev.bytesPerSeq * n1 + c.bytesPerSeq * n2) / (n1 + n2),
    };
  }
  return out;
}
