import { RangeSet } from "../lanes/index.ts";
import type { EvaluationState } from "./evaluation-state.ts";
import type { Loss } from "./scenario.ts";
import { applyLosses, initialView, liveRanges, siteDiskSurvives } from "./survivor-view.ts";

/**
 * Every sequence of `lane` that physically survives `losses`: live claims after the losses plus
 * what surviving bases include. Unlike a cut, this sees past a hole: a range above a missing one
 * still matters, because refilling the hole makes it part of the cut again. Pure.
 */
export function survivingRanges(state: EvaluationState, losses: readonly Loss[], lane: string): RangeSet {
  const view = applyLosses(state, initialView(state), losses);
  let out = liveRanges(view, lane);
  for (const b of state.bases) {
    const h = state.holders.find((x) => x.id === b.holder);
    const through = b.cut[lane];
    if (h !== undefined && through !== undefined && through >= 0 && siteDiskSurvives(view, h.site))
      out = out.union(RangeSet.of(0, through));
  }
  return out;
}
