import { RangeSet } from "../lanes/index.ts";
import type { BaseSnapshot, EvaluationState } from "./evaluation-state.ts";
import type { Loss } from "./scenario.ts";
import { applyLosses, initialView, siteDiskSurvives, type SurvivorView } from "./survivor-view.ts";
import { imagesOnly } from "./coalesced-cut.ts";

/** Coalesced windows a holder may give up onto a base: the base already contains their state. */
export interface ImageRelease {
  readonly holder: string;
  /** The raw lane the image is of. */
  readonly lane: string;
  readonly ranges: RangeSet;
  readonly base: BaseSnapshot;
}

/**
 * What each holder's coalesced image (issue #22) may release: the windows a base contains, when that
 * base outlives the image — in every scenario and every timeline step of the contract (required or
 * not) where the image survives, the base's holder is active and its disk survives too. Then
 * recovering from the base plus the later windows rebuilds every cut the released windows could,
 * wherever they could. The newest such base of the lane is used. Images never count for raw
 * custody, so this never touches what raw release decisions rely on. Pure.
 */
export function imageReleases(state: EvaluationState, active: (holder: string) => boolean): ImageRelease[] {
  const images = imagesOnly(state);
  if (images === undefined) return [];
  const holders = state.holders.filter((h) => (h.coalesced?.length ?? 0) > 0);
  const losses: (readonly Loss[])[] = [...state.scenarios.map((s) => s.losses)];
  for (const tl of state.timelines) {
    let sofar: Loss[] = [];
    for (const ev of tl.events) losses.push((sofar = [...sofar, ...ev.losses]));
  }
  const views: SurvivorView[] = losses.map((l) => applyLosses(images, initialView(images), l));
  const siteOf = new Map(state.holders.map((h) => [h.id, h.site]));
  const out: ImageRelease[] = [];
  for (const h of holders) {
    for (const lane of new Set(h.coalesced!.map((c) => c.lane))) {
      const held = h.coalesced!.filter((c) => c.lane === lane).reduce((a, c) => a.union(c.ranges), RangeSet.EMPTY);
      const survives = (v: SurvivorView) => v.claims.some((lc) => lc.holder === h.id && lc.claim.lane === lane);
      const outlives = (b: BaseSnapshot) => {
        const site = siteOf.get(b.holder);
        return site !== undefined && active(b.holder) && views.every((v) => !survives(v) || siteDiskSurvives(v, site));
      };
      const base = state.bases
        .filter((b) => (b.cut[lane] ?? -1) > 0 && outlives(b))
        .sort((a, b) => b.cut[lane]! - a.cut[lane]!)[0];
      if (base === undefined) continue;
      const ranges = held.intersect(RangeSet.of(0, base.cut[lane]!));
      if (!ranges.isEmpty) out.push({ holder: h.id, lane, ranges, base });
    }
  }
  return out;
}
