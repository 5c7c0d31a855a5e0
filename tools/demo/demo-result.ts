/**
 * What the demo measured, as one DemoResult. Its own file so report-input.ts (which saves and
 * reads it back) and demo-script.ts (which produces it) need not import each other.
 */
import type { Deployment } from "./deployment.ts";
import type { LegRow } from "./scenario-table.ts";
import type { RunResult } from "./strike-run.ts";

/** One scenario of the JSON summary: the strike, on one volume. */
export interface ScenarioOutcome {
  readonly name: string;
  readonly volume: string;
  /** "with waypoint" or "without <holder>": the volume's custody path. */
  readonly path: string;
  readonly acknowledged: number;
  readonly predicted_cut: number | null;
  readonly recovered_cut: number;
  readonly recovered_lsn: number;
  readonly lost_seqs: number;
  readonly predicted_lost_seqs: number;
  readonly cut_at_strike: number | null;
  readonly byte_exact: boolean;
}

/** Everything the demo measured. */
export interface DemoResult {
  readonly runDir: string;
  readonly deployment: Deployment;
  readonly run: RunResult;
  readonly scenarios: ScenarioOutcome[];
  readonly mismatches: number;
  readonly losingScenarios: number;
  /** Lost sequences of the first volume (with the waypoint) and of the comparison volume (without). */
  readonly waypointLoss: { readonly withWaypoint: number; readonly withoutWaypoint: number } | null;
  readonly legs: LegRow[];
  /**
   * Median ms from a unit's first capture anywhere to its capture at each holder (first volume); null:
   * it captured nothing.
   */
  readonly captureLagMs: Record<string, number | null>;
  readonly startedPids: number[];
  readonly leftPids: number[];
  readonly elapsedSec: number;
}
