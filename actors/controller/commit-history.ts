import type { EvaluationReport } from "../../policies/index.ts";
import { commitHistoryBounds, foldCommitHistory } from "../../policies/index.ts";
import type { CommitRun, EvaluationState } from "../../policies/index.ts";
import type { VolumeTopology } from "./controller-config.ts";
import { COARSE_RUN_SEQS } from "./controller-ports.ts";
import { retentionFloor } from "./retention-window.ts";
import { CommitSightings } from "./commit-sightings.ts";
import { RangeSet } from "../../lanes/index.ts";

/**
 * The writer's commit runs the controller keeps to price and date what a scenario would lose:
 * appended as progress arrives (a run that continues the last one of its lane merges into it) and
 * trimmed every evaluation round. For a retention window it also keeps when sequences no run dates
 * yet were first seen retained (see CommitSightings).
 */
export class CommitHistory {
  runs: CommitRun[] = [];
  readonly sightings = new CommitSightings();
  /** Per lane, every sequence some run dates (folding never shrinks it). */
  private readonly dated = new Map<string, RangeSet>();

  /** Notes `ranges` of `lane` as retained at `atMs` (only what no run dates yet is recorded). */
  sight(lane: string, ranges: RangeSet, atMs: number): void {
    this.sightings.note(lane, ranges, this.datedIn(lane), atMs);
  }

  private datedIn(lane: string): RangeSet {
    return this.dated.get(lane) ?? RangeSet.EMPTY;
  }

  /** Appends a run, merged into the last one of its lane when it continues it (same time and size). */
  add(c: CommitRun): void {
    if (c.first <= c.last) this.dated.set(c.lane, this.datedIn(c.lane).add(c.first, c.last));
    for (let i = this.runs.length - 1; i >= 0 && i >= this.runs.length - 8; i--) {
      const prev = this.runs[i]!;
      if (prev.lane !== c.lane) continue;
      if (prev.last + 1 === c.first && prev.committedAtMs === c.committedAtMs && prev.bytesPerSeq === c.bytesPerSeq) {
        this.runs[i] = { ...prev, last: c.last };
        return;
      }
      break;
    }
    this.runs.push(c);
  }

  /**
   * Keeps the history small without losing what reports need (see `foldCommitHistory`): exact
   * above each lane's lowest cut, coarse below it, one run below what any holder still retains;
   * never folded inside a retention window.
   */
  trim(
    state: EvaluationState,
    report: EvaluationReport,
    lanes: readonly string[],
    retention: VolumeTopology["retention"],
  ): void {
    const { floor, horizon } = commitHistoryBounds(state, report, lanes);
    if (retention !== undefined)
      for (const [lane, f] of Object.entries(retentionFloor(retention, this.runs, lanes, state.asOfMs)))
        floor[lane] = Math.min(floor[lane] ?? f, f);
    this.runs = foldCommitHistory(this.runs, floor, horizon, COARSE_RUN_SEQS);
    if (this.sightings.runs.length > 0) this.sightings.prune((lane) => this.datedIn(lane), horizon);
  }
}
