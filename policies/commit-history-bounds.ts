import type { EvaluationState } from "./evaluation-state.ts";
import type { EvaluationReport } from "./evaluate.ts";

/**
 * Where `foldCommitHistory` may fold, per lane: `floor` is the lowest cut a scenario that keeps
 * something keeps (0 when none does), `horizon` the lowest sequence any holder still claims. Pure.
 */
export function commitHistoryBounds(
  state: EvaluationState,
  report: EvaluationReport,
  lanes: readonly string[],
): { floor: Record<string, number>; horizon: Record<string, number> } {
  const floor: Record<string, number> = {};
  const horizon: Record<string, number> = {};
  for (const lane of lanes) {
    let low = Infinity;
    // A scenario that keeps nothing loses from sequence 1 on: folded runs still give it exact
    // totals and the oldest time, so only scenarios that keep something bound the fold.
    for (const r of report.reports) {
      const cut = r.cut?.[lane] ?? 0;
      if (cut > 0) low = Math.min(low, cut);
    }
    floor[lane] = Number.isFinite(low) ? low : 0;
    let kept = Infinity;
    for (const h of state.holders)
      for (const c of h.claims) if (c.lane === lane) kept = Math.min(kept, c.ranges.min ?? Infinity);
    horizon[lane] = Number.isFinite(kept) ? kept : 0;
  }
  return { floor, horizon };
}
