import { RangeSet } from "../lanes/range-set.ts";
import type { CommitRun } from "./evaluation-state.ts";

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
  return { seqs: ranges.count, bytes: Math.round(bytes), unknownSeqs: ranges.count - known.count, oldestCommittedAtMs: oldest };
}
