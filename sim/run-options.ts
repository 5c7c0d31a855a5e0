import type { EvaluationState, ReleaseDecision, ReleaseRequest } from "../policies/index.ts";
import type { RecoveryTally } from "./contract-tally.ts";
import type { TraceEvent } from "./event-trace.ts";
import type { FaultEvent } from "./fault-schedule.ts";
import type { InvariantId, Violation } from "./invariants.ts";
import type { WorldSpec } from "./world.ts";

/** The release decision function: `authorizeReleases` from policies/, or a test's replacement. */
export type ReleaseAuthorizer = (state: EvaluationState, requests: readonly ReleaseRequest[]) => ReleaseDecision[];

/** Options of one run. */
export interface RunOptions {
  /** Number of holders (1–10); default: drawn from the seed. */
  holders?: number;
  /** Stop after this many clock steps (default 200 000). */
  steps?: number;
  /** Virtual duration (default 30 s). */
  durationMs?: number;
  /** Replace the seed's fault schedule (the minimizer uses this). */
  faults?: readonly FaultEvent[];
  /**
   * The release decision function. Production code and the CLI always use `authorizeReleases`;
   * only tests pass a replacement (e.g. a deliberately weakened one, to prove the checks can fail).
   */
  authorize?: ReleaseAuthorizer;
  /** Invariants to check (default: all). */
  checks?: readonly InvariantId[];
  /**
   * A standby controller beside the active one, sharing the volume through the control lease; the
   * faults then also pause the active one (a pause freezes its timers and messages).
   */
  failover?: boolean;
}

/** Summary of one run. */
export interface RunResult {
  readonly seed: number;
  readonly spec: WorldSpec;
  readonly steps: number;
  readonly virtualMs: number;
  readonly traceHash: string;
  readonly traceEvents: number;
  readonly trace: readonly TraceEvent[];
  readonly violation: Violation | undefined;
  /** Step index at which the violation was found. */
  readonly violationStep: number | undefined;
  readonly writes: number;
  readonly grants: number;
  /** Strikes checked against a confirmed cut (within the contract). */
  readonly strikesChecked: number;
  /**
   * Liveness, measured but not asserted: after each strike, did every required scenario's
   * confirmed cut again reach the writes acknowledged at the strike, within the repair budget?
   */
  readonly recovery: RecoveryTally;
  readonly scheduleShape: string;
  readonly scheduleKey: string;
  readonly counters: Readonly<Record<string, number>>;
  /** Unexpected failures inside actors (bugs); a run stops at the first. */
  readonly errors?: readonly string[];
  /** The production controller's memory footprint at the end (actor worlds only). */
  readonly controller?: {
    readonly audits: number;
    readonly releasesCommitted: number;
    readonly commitRuns: number;
    readonly releaseEntries: number;
  };
}
