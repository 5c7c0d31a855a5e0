import type { ConsistencyManifest, EvaluationState } from "./evaluation-state.ts";
import { LossKind } from "./scenario.ts";
import { siteDiskSurvives, type SurvivorView } from "./survivor-view.ts";

/**
 * True when consistency manifest `m` still exists after the view's losses. A manifest on disk
 * (the default) lasts as long as a listed holder's disk; one a holder keeps in memory beside the
 * range it covers (what holders receipt today) lasts only while that holder's process survives
 * (no loss, or a partition) and it still holds a live claim containing the manifest's sequence of
 * that lane — its memory goes with a crash or power loss even where the holder's disk survives. Pure.
 */
export function manifestSurvives(state: EvaluationState, view: SurvivorView, m: ConsistencyManifest): boolean {
  return m.holders.some((id) => {
    const holder = state.holders.find((h) => h.id === id);
    if (holder === undefined) return false;
    if ((m.residency ?? "disk") === "disk") return siteDiskSurvives(view, holder.site);
    const loss = view.siteLoss.get(holder.site);
    if (loss !== undefined && loss !== LossKind.partition) return false;
    return view.claims.some(
      (lc) => lc.holder === id && m.cut[lc.claim.lane] !== undefined && lc.claim.ranges.has(m.cut[lc.claim.lane]!),
    );
  });
}
