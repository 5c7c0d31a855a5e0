import type { EvaluationState } from "./evaluation-state.ts";
import type { Scenario } from "./scenario.ts";
import { applyLosses, initialView } from "./survivor-view.ts";
import { CutStream, cutWeight, reportFromView, type SurvivalReport } from "./survival-report.ts";

/**
 * The coalesced stream as a scenario's alternative (issue #22 item 1). The raw report stands
 * unless the holders' coalesced images alone — evaluated exactly like raw claims, on the same
 * bases, losses and key paths — rebuild a newer cut; then the report is that one, marked
 * `stream: coalesced` (its cut is a window end: the state there, not the raw records before it).
 * Raw and coalesced claims are never mixed into one cut, and nothing that decides what raw
 * custody may be released calls this: release decisions evaluate raw claims only. Pure.
 */
export function withCoalescedStream(state: EvaluationState, scenario: Scenario, raw: SurvivalReport): SurvivalReport {
  if (!state.holders.some((h) => (h.coalesced?.length ?? 0) > 0)) return raw;
  const images: EvaluationState = { ...state, holders: state.holders.map((h) => ({ id: h.id, site: h.site, claims: h.coalesced ?? [], ...(h.audit === undefined ? {} : { audit: h.audit }) })), forwards: [] };
  const c = reportFromView(images, applyLosses(images, initialView(images), scenario.losses), { ...scenario, kind: "scenario" });
  if (c.cut === null || (raw.cut !== null && cutWeight(c.cut) <= cutWeight(raw.cut))) return raw;
  return { ...c, stream: CutStream.coalesced };
}
