import { RangeSet } from "../lanes/index.ts";
import type { CommitRun, EvaluationState } from "./evaluation-state.ts";
import type { EvaluationReport } from "./evaluate.ts";
import { tallyCommits } from "./commit-log.ts";
import { lossReasons, SurvivalFlag, Verdict, type SurvivalReport } from "./survival-report.ts";

/**
 * Verdicts that mean a loss (issue #47). One evaluation says what a scenario would lose if it
 * happened this instant; on a healthy volume that always includes the newest writes, acknowledged
 * by the writer and not yet receipted by the holders the scenario needs. Those are in flight, not
 * lost. A verdict read over time (a status watch, an alert) turns on lost writes only:
 *
 * - a write the scenario would lose is **in flight** while it is younger than the receipt deadline
 *   (its age counted from its commit on the writer, or — for a write no commit record dates yet —
 *   from when the controller first saw it retained); otherwise it is **overdue**. A write nothing
 *   dates at all counts as overdue;
 * - the overdue writes are held against the contract's allowance (writes, bytes, age);
 * - only once that excess has held without a break for `graceMs` does the verdict say not met for
 *   it. A single evaluation in which it does not hold starts the grace over, and the excess is
 *   never taken to have begun before its oldest dated overdue write passed its deadline (between
 *   two evaluations far apart, other writes may have come and gone).
 *
 * Every other reason (nothing rebuildable, deadline, evidence, key path, control plane, …) counts
 * at once, as in the evaluation. Pure: the caller carries `VerdictMemory` from one evaluation to
 * the next; an empty memory (a first look) starts every grace at `asOfMs`.
 */
export interface VerdictTiming {
  /** How long after its commit a write may still be waiting for receipts (ms). */
  readonly receiptDeadlineMs: number;
  /** How long overdue writes must exceed the allowance before the verdict says not met (ms). */
  readonly graceMs: number;
}

/** The controller's defaults (docs/policies.md, "Verdicts over time"). */
export const DEFAULT_VERDICT_TIMING: VerdictTiming = { receiptDeadlineMs: 2_000, graceMs: 2_000 };

/** Per report (`<kind>:<name>`), since when (ms) its overdue writes have exceeded the allowance. */
export type VerdictMemory = Readonly<Record<string, number>>;

/** A survival report whose verdict follows the rule above, with its loss split in two. */
export interface SteadyReport extends SurvivalReport {
  /** Of `lostSeqs`, the writes still within their receipt deadline. */
  readonly inFlightSeqs: number;
  /** Of `lostSeqs`, the writes past it (or never dated): lost. */
  readonly overdueSeqs: number;
  /** Since when the overdue writes have exceeded the allowance; null while they do not. */
  readonly lossSinceMs: number | null;
}

/** What a report's loss splits into: the writes in flight, and the figures of the overdue rest. */
export interface LossSplit {
  readonly inFlightSeqs: number;
  readonly overdue: {
    readonly seqs: number;
    readonly bytes: number;
    readonly bytesUnknown: boolean;
    readonly oldestAgeMs: number;
    /** When the oldest dated overdue write was committed (or first seen); null when none is dated. */
    readonly oldestAtMs: number | null;
  };
}

/**
 * Splits `lost` (lane → ranges) at `asOfMs` into writes in flight and overdue ones. A commit run
 * dates its sequences; `sightings` (runs of first sightings, an upper bound of the commit time)
 * date only what no commit run does. Pure.
 */
export function splitLoss(
  lost: Readonly<Record<string, readonly [number, number][]>>,
  commits: readonly CommitRun[],
  sightings: readonly CommitRun[],
  asOfMs: number,
  receiptDeadlineMs: number,
): LossSplit {
  const youngAfter = asOfMs - receiptDeadlineMs;
  let inFlightSeqs = 0;
  let seqs = 0;
  let bytes = 0;
  let bytesUnknown = false;
  let oldest: number | null = null;
  for (const [lane, pairs] of Object.entries(lost)) {
    const gone = RangeSet.fromJSON(pairs);
    if (gone.isEmpty) continue;
    let dated = RangeSet.EMPTY;
    let young = RangeSet.EMPTY;
    const low = gone.min!;
    for (const c of commits) {
      if (c.lane !== lane || c.last < low) continue;
      dated = dated.add(c.first, c.last);
      if (c.committedAtMs > youngAfter) young = young.add(c.first, c.last);
    }
    // A folded run carries its oldest commit time: what it covers is never taken as younger than it is.
    young = young.subtract(oldRuns(commits, lane, low, youngAfter));
    for (const s of sightings)
      if (s.lane === lane && s.committedAtMs > youngAfter)
        young = young.union(RangeSet.of(s.first, s.last).subtract(dated));
    const inFlight = gone.intersect(young);
    const overdue = gone.subtract(inFlight);
    inFlightSeqs += inFlight.count;
    if (overdue.isEmpty) continue;
    const t = tallyCommits(commits, lane, overdue);
    seqs += t.seqs;
    bytes += t.bytes;
    if (t.unknownSeqs > 0) bytesUnknown = true;
    const first = tallyCommits([...commits, ...sightings], lane, overdue).oldestCommittedAtMs;
    if (first !== null && (oldest === null || first < oldest)) oldest = first;
  }
  return {
    inFlightSeqs,
    overdue: {
      seqs,
      bytes,
      bytesUnknown,
      oldestAgeMs: seqs === 0 || oldest === null ? 0 : Math.max(0, asOfMs - oldest),
      oldestAtMs: seqs === 0 ? null : oldest,
    },
  };
}

/** What runs of `lane` committed at or before `cutoff` cover from `low` up. */
function oldRuns(commits: readonly CommitRun[], lane: string, low: number, cutoff: number): RangeSet {
  let old = RangeSet.EMPTY;
  for (const c of commits)
    if (c.lane === lane && c.last >= low && c.committedAtMs <= cutoff) old = old.add(c.first, c.last);
  return old;
}

/**
 * Applies the rule to every report of `report` (evaluated from `state`), given what the previous
 * evaluation left in `memory`. Returns the reports with their steady verdicts and the memory for
 * the next evaluation. Pure.
 */
export function steadyVerdicts(
  state: EvaluationState,
  report: EvaluationReport,
  timing: VerdictTiming,
  memory: VerdictMemory,
  sightings: readonly CommitRun[] = [],
): { reports: SteadyReport[]; memory: VerdictMemory } {
  const next: Record<string, number> = {};
  const reports = report.reports.map((r, i): SteadyReport => {
    // evaluateState reports the scenarios first, then the timelines, each in input order.
    const contract = i < state.scenarios.length ? state.scenarios[i] : state.timelines[i - state.scenarios.length];
    const allowed = contract?.allowedLoss;
    const split = splitLoss(r.lost, state.commits, sightings, state.asOfMs, timing.receiptDeadlineMs);
    // The evaluation's reasons less those its whole loss gave: what counts at once.
    const whole = lossReasons(
      {
        seqs: r.lostSeqs,
        bytes: r.lostBytes,
        bytesUnknown: r.flags.includes(SurvivalFlag.lostBytesUnknown),
        oldestAgeMs: r.oldestLostAgeMs,
      },
      allowed,
    );
    const others = r.reasons.filter((x) => !whole.includes(x));
    const excess = lossReasons(split.overdue, allowed);
    const key = `${r.kind}:${r.name}`;
    const at = split.overdue.oldestAtMs;
    const overdueFrom = at === null ? -Infinity : Math.min(at + timing.receiptDeadlineMs, state.asOfMs);
    const since = excess.length === 0 ? null : Math.max(memory[key] ?? state.asOfMs, overdueFrom);
    if (since !== null) next[key] = since;
    const held = since !== null && state.asOfMs - since >= timing.graceMs;
    const reasons = [...(held ? excess : []), ...others];
    return {
      ...r,
      inFlightSeqs: split.inFlightSeqs,
      overdueSeqs: split.overdue.seqs,
      lossSinceMs: since,
      verdict: reasons.length === 0 ? Verdict.met : Verdict.notMet,
      reasons,
    };
  });
  return { reports, memory: next };
}
