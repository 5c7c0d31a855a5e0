import type { EvaluationState } from "./evaluation-state.ts";
import { CutStream, cutWeight, type SurvivalReport } from "./survival-report.ts";

/**
 * The coalesced stream as a scenario's or timeline's alternative (issue #22 item 1). The raw
 * report stands unless `image` — the same scenario or timeline evaluated on the holders' coalesced
 * images alone (`imagesOnly`: the same bases, losses and key paths) — rebuilds a newer cut; then
 * the report is that one, marked `stream: coalesced` (its cut is a window end: the state there,
 * not the raw records before it). Raw and coalesced claims are never mixed into one cut, and
 * nothing that decides what raw custody may be released calls this: release decisions evaluate
 * raw claims only. Pure.
 */
export function withCoalescedStream(raw: SurvivalReport, image: SurvivalReport | undefined): SurvivalReport {
  if (image === undefined || image.cut === null || (raw.cut !== null && cutWeight(image.cut) <= cutWeight(raw.cut)))
    return raw;
  return { ...image, stream: CutStream.coalesced };
}

/**
 * The state with the holders' coalesced images as their only claims (no forwards: images are not
 * forwarded) and the coalesced stream's manifests as its only manifests (a raw manifest may cut
 * inside a window, where no image rebuilds the volume); undefined when no holder has an image.
 */
export function imagesOnly(state: EvaluationState): EvaluationState | undefined {
  if (!state.holders.some((h) => (h.coalesced?.length ?? 0) > 0)) return undefined;
  return {
    ...state,
    holders: state.holders.map((h) => ({
      id: h.id,
      site: h.site,
      claims: h.coalesced ?? [],
      ...(h.audit === undefined ? {} : { audit: h.audit }),
    })),
    forwards: [],
    manifests: state.coalescedManifests ?? [],
  };
}
