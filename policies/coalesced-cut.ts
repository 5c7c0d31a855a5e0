import type { EvaluationState } from "./evaluation-state.ts";
import { CutStream, cutWeight, type SurvivalReport } from "./survival-report.ts";

/**
 * The coalesced stream as a scenario's or timeline's alternative (issue #22 item 1). The raw
 * report stands unless the holders' coalesced images alone — evaluated exactly like raw claims by
 * `evaluate` (the same scenario or timeline, bases, losses and key paths) — rebuild a newer cut;
 * then the report is that one, marked `stream: coalesced` (its cut is a window end: the state
 * there, not the raw records before it). Raw and coalesced claims are never mixed into one cut,
 * and nothing that decides what raw custody may be released calls this: release decisions
 * evaluate raw claims only. Pure.
 */
export function withCoalescedStream(state: EvaluationState, raw: SurvivalReport, evaluate: (images: EvaluationState) => SurvivalReport): SurvivalReport {
  if (!state.holders.some((h) => (h.coalesced?.length ?? 0) > 0)) return raw;
  const c = evaluate(imagesOnly(state));
  if (c.cut === null || (raw.cut !== null && cutWeight(c.cut) <= cutWeight(raw.cut))) return raw;
  return { ...c, stream: CutStream.coalesced };
}

/** The state with the holders' coalesced images as their only claims (no forwards: images are not forwarded). */
export function imagesOnly(state: EvaluationState): EvaluationState {
  return { ...state, holders: state.holders.map((h) => ({ id: h.id, site: h.site, claims: h.coalesced ?? [], ...(h.audit === undefined ? {} : { audit: h.audit }) })), forwards: [] };
}
