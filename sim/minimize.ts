import { runActorWorld } from "./actor-runner.ts";
import type { RunOptions, RunResult } from "./run-options.ts";

/** Runs one seeded world (the production actors: `runActorWorld`; tests may wrap it). */
export type WorldRunner = (seed: number, opts: RunOptions) => RunResult | Promise<RunResult>;

/**
 * Shrinks a failing run: drops fault events one at a time while the same invariant still breaks
 * at the same or an earlier step, then cuts the run at the violating step. Returns the smallest
 * failing run found (or `result`). `run` must be the runner that produced `result`.
 */
export async function minimizeRun(
  result: RunResult,
  opts: RunOptions = {},
  run: WorldRunner = runActorWorld,
): Promise<RunResult> {
  if (result.violation === undefined) return result;
  const target = result.violation.invariant;
  const fixed = { ...opts, holders: result.spec.holders.length, durationMs: result.spec.timing.durationMs };
  let best = result;
  let faults = [...result.spec.faults];
  for (let i = faults.length - 1; i >= 0; i--) {
    const candidate = faults.filter((_, j) => j !== i);
    const r = await run(result.seed, { ...fixed, faults: candidate });
    // Keep the removal when the same invariant still breaks, no later than before (a shorter trace).
    if (r.violation?.invariant === target && r.violationStep! <= best.violationStep!) {
      faults = candidate;
      best = r;
    }
  }
  // Cut at the violating step: the trace then ends with the violation.
  const shortDuration = Math.ceil(best.violation!.atMs) + 1;
  const r = await run(result.seed, {
    ...fixed,
    faults,
    durationMs: Math.max(shortDuration, 1),
    steps: best.violationStep! + 1,
  });
  return r.violation?.invariant === target ? r : best;
}
