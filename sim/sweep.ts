import { runActorWorld } from "./actor-runner.ts";
import type { WorldRunner } from "./minimize.ts";
import type { RunOptions } from "./run-options.ts";

/** What a sweep over a seed range found. */
export interface SweepResult {
  readonly from: number;
  readonly to: number;
  readonly runs: number;
  readonly violations: number;
  /** Unexpected failures inside actors (bugs), counted apart from invariant violations. */
  readonly errors: number;
  /** The first violating seeds (up to 50) with the invariant each broke. */
  readonly violating: ReadonlyArray<{ seed: number; invariant: string; message: string }>;
  /** Distinct fault schedules by shape (kinds and targets in order, times ignored). */
  readonly distinctScheduleShapes: number;
  /** Distinct fault schedules including times. */
  readonly distinctSchedules: number;
  readonly strikesChecked: number;
  /**
   * Liveness over every strike the contract covers: coverage back within the repair budget, later,
   * or not by the end of the run (late and never are failures); strikes outside the contract by
   * reason; required scenarios not being met before a strike; the first failing strikes.
   */
  readonly recovery: {
    strikes: number;
    inBudget: number;
    late: number;
    never: number;
    outside: Record<string, number>;
    unmetBefore: number;
    failing: { seed: number; failure: string }[];
  };
  readonly steps: number;
  readonly writes: number;
  readonly grants: number;
}

/**
 * Runs every seed in from..to (inclusive) with `opts` and tallies what was explored and found.
 * `run` defaults to the production actors (`runActorWorld`).
 */
export async function sweep(
  from: number,
  to: number,
  opts: RunOptions = {},
  run: WorldRunner = runActorWorld,
  onRun?: (seed: number) => void,
): Promise<SweepResult> {
  const shapes = new Set<string>();
  const exact = new Set<string>();
  const violating: Array<{ seed: number; invariant: string; message: string }> = [];
  let violations = 0;
  let errors = 0;
  let strikesChecked = 0;
  let steps = 0;
  let writes = 0;
  let grants = 0;
  const recovery = {
    strikes: 0,
    inBudget: 0,
    late: 0,
    never: 0,
    outside: {} as Record<string, number>,
    unmetBefore: 0,
    failing: [] as { seed: number; failure: string }[],
  };
  for (let seed = from; seed <= to; seed++) {
    const r = await run(seed, opts);
    shapes.add(r.scheduleShape);
    exact.add(r.scheduleKey);
    strikesChecked += r.strikesChecked;
    steps += r.steps;
    writes += r.writes;
    grants += r.grants;
    recovery.strikes += r.recovery.strikes;
    recovery.inBudget += r.recovery.inBudget;
    recovery.late += r.recovery.late;
    recovery.never += r.recovery.never;
    recovery.unmetBefore += r.recovery.unmetBefore;
    for (const [k, n] of Object.entries(r.recovery.outside)) recovery.outside[k] = (recovery.outside[k] ?? 0) + n;
    for (const f of r.recovery.failures) if (recovery.failing.length < 50) recovery.failing.push({ seed, failure: f });
    if (r.violation) {
      violations++;
      if (violating.length < 50)
        violating.push({ seed, invariant: r.violation.invariant, message: r.violation.message });
    }
    for (const e of r.errors ?? []) {
      errors++;
      if (violating.length < 50) violating.push({ seed, invariant: "actor_error", message: e });
    }
    onRun?.(seed);
  }
  return {
    from,
    to,
    runs: to - from + 1,
    violations,
    errors,
    violating,
    distinctScheduleShapes: shapes.size,
    distinctSchedules: exact.size,
    strikesChecked,
    recovery,
    steps,
    writes,
    grants,
  };
}
