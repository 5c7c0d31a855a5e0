import type { EvaluationReport } from "../../policies/index.ts";
import { commitHistoryBounds, foldCommitHistory } from "../../policies/index.ts";
import type { CommitRun, EvaluationState } from "../../policies/index.ts";
import type { VolumeTopology } from "./controller-config.ts";
import { COARSE_RUN_SEQS } from "./controller-ports.ts";
import { retentionFloor } from "./retention-window.ts";
import {
  CommitSightings,
  NO_SIGHTINGS,
  noteSighting,
  pruneSightings,
  type SightingsState,
} from "./commit-sightings.ts";
import type { RangePairs } from "./controller-ledger.ts";
import { RangeSet } from "../../lanes/index.ts";

/**
 * The writer's commit runs the controller keeps to price and date what a scenario would lose:
 * appended as progress arrives (a run that continues the last one of its lane merges into it) and
 * trimmed every evaluation round. For a retention window it also keeps when sequences no run dates
 * yet were first seen retained (see commit-sightings.ts). Plain data; the functions below are pure.
 */
export interface CommitHistoryState {
  readonly runs: readonly CommitRun[];
  /** Per lane, every sequence some run dates (folding never shrinks it), as RangeSet pairs. */
  readonly dated: Readonly<Record<string, RangePairs>>;
  readonly sightings: SightingsState;
}

export const EMPTY_HISTORY: CommitHistoryState = { runs: [], dated: {}, sightings: NO_SIGHTINGS };

const datedIn = (h: CommitHistoryState, lane: string): RangeSet => RangeSet.fromJSON(h.dated[lane] ?? []);

/** Appends runs, each merged into the last one of its lane when it continues it (same time and size). */
export function addCommitRuns(h: CommitHistoryState, added: readonly CommitRun[]): CommitHistoryState {
  if (added.length === 0) return h;
  const runs = [...h.runs];
  const dated: Record<string, RangePairs> = { ...h.dated };
  for (const c of added) {
    if (c.first <= c.last)
      dated[c.lane] = RangeSet.fromJSON(dated[c.lane] ?? [])
        .add(c.first, c.last)
        .toJSON();
    appendRun(runs, c);
  }
  return { runs, dated, sightings: h.sightings };
}

function appendRun(runs: CommitRun[], c: CommitRun): void {
  for (let i = runs.length - 1; i >= 0 && i >= runs.length - 8; i--) {
    const prev = runs[i]!;
    if (prev.lane !== c.lane) continue;
    if (prev.last + 1 === c.first && prev.committedAtMs === c.committedAtMs && prev.bytesPerSeq === c.bytesPerSeq) {
      runs[i] = { ...prev, last: c.last };
      return;
    }
    break;
  }
  runs.push(c);
}

/** Notes `ranges` of `lane` as retained at `atMs` (only what no run dates yet is recorded). */
export function sightRetained(h: CommitHistoryState, lane: string, ranges: RangeSet, atMs: number): CommitHistoryState {
  const sightings = noteSighting(h.sightings, lane, ranges, datedIn(h, lane), atMs);
  return sightings === h.sightings ? h : { ...h, sightings };
}

/** Where a round lets the history fold: exact above `floor`, one run below `horizon` (see commitHistoryBounds). */
export interface HistoryBounds {
  readonly floor: Readonly<Record<string, number>>;
  readonly horizon: Readonly<Record<string, number>>;
}

/** The bounds one evaluation allows, never folding inside a retention window. Pure. */
export function historyBounds(
  h: CommitHistoryState,
  state: EvaluationState,
  report: EvaluationReport,
  lanes: readonly string[],
  retention: VolumeTopology["retention"],
): HistoryBounds {
  const { floor, horizon } = commitHistoryBounds(state, report, lanes);
  if (retention !== undefined)
    for (const [lane, f] of Object.entries(retentionFloor(retention, [...h.runs], lanes, state.asOfMs)))
      floor[lane] = Math.min(floor[lane] ?? f, f);
  return { floor, horizon };
}

/** Keeps the history small without losing what reports need (see `foldCommitHistory`). Pure. */
export function trimHistory(h: CommitHistoryState, b: HistoryBounds): CommitHistoryState {
  const runs = foldCommitHistory([...h.runs], { ...b.floor }, b.horizon, COARSE_RUN_SEQS);
  const sightings =
    h.sightings.runs.length > 0 ? pruneSightings(h.sightings, (lane) => datedIn(h, lane), b.horizon) : h.sightings;
  return { runs, dated: h.dated, sightings };
}

/** The same history kept in one place (for callers outside a machine). */
export class CommitHistory {
  private state: CommitHistoryState = EMPTY_HISTORY;
  readonly sightings = new CommitSightings();

  get runs(): CommitRun[] {
    return [...this.state.runs];
  }

  /** Notes `ranges` of `lane` as retained at `atMs` (only what no run dates yet is recorded). */
  sight(lane: string, ranges: RangeSet, atMs: number): void {
    this.sightings.note(lane, ranges, RangeSet.fromJSON(this.state.dated[lane] ?? []), atMs);
  }

  /** Appends a run, merged into the last one of its lane when it continues it (same time and size). */
  add(c: CommitRun): void {
    this.state = addCommitRuns(this.state, [c]);
  }

  /** Trims as one evaluation round allows (see historyBounds, trimHistory). */
  trim(
    state: EvaluationState,
    report: EvaluationReport,
    lanes: readonly string[],
    retention: VolumeTopology["retention"],
  ): void {
    const b = historyBounds(this.state, state, report, lanes, retention);
    this.state = { ...trimHistory(this.state, b), sightings: this.state.sightings };
    if (this.sightings.runs.length > 0)
      this.sightings.prune((lane) => RangeSet.fromJSON(this.state.dated[lane] ?? []), b.horizon);
  }
}
