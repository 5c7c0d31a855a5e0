/** The fixed CI corpus of simulator seeds, shared by the corpus test files. */
import type { ExecutionContext } from "ava";
import { runActorWorld } from "../../sim/actor-runner.ts";

/** Virtual duration of each corpus run (short enough to keep CI fast, long enough for strikes and repair). */
export const CORPUS_DURATION_MS = 12_000;

/** Holder count for a corpus seed: cycles through 1..10 so every size is covered equally. */
export const corpusHolders = (seed: number): number => ((seed - 1) % 10) + 1;

/**
 * Runs seeds first..last with the production actors and asserts every run is free of invariant
 * violations and of unexpected actor errors, and that every strike the contract covers got its
 * coverage back within the repair budget; returns the fault-schedule shapes it explored.
 */
export async function runCorpusChunk(t: ExecutionContext, first: number, last: number): Promise<Set<string>> {
  const shapes = new Set<string>();
  const failures: string[] = [];
  let checked = 0;
  let writes = 0;
  let grants = 0;
  let strikes = 0;
  let inBudget = 0;
  for (let seed = first; seed <= last; seed++) {
    const r = await runActorWorld(seed, { holders: corpusHolders(seed), durationMs: CORPUS_DURATION_MS });
    shapes.add(r.scheduleShape);
    checked += r.strikesChecked;
    writes += r.writes;
    grants += r.grants;
    if (r.violation) failures.push(`seed ${seed}: ${r.violation.invariant} — ${r.violation.message}`);
    for (const e of r.errors ?? []) failures.push(`seed ${seed}: actor error — ${e}`);
    for (const f of r.recovery.failures) failures.push(`seed ${seed}: liveness — ${f}`);
    strikes += r.recovery.strikes;
    inBudget += r.recovery.inBudget;
  }
  t.deepEqual(failures, [], "every corpus seed stays green");
  t.log(`seeds ${first}..${last}: ${shapes.size} distinct fault schedules, ${checked} strikes checked against confirmed cuts, ${writes} acknowledged writes, ${grants} release frontiers, ${inBudget}/${strikes} strikes back within the repair budget`);
  return shapes;
}
