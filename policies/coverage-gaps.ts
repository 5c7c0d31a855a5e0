import { RangeSet } from "../lanes/index.ts";
import type { EvaluationState } from "./evaluation-state.ts";
import type { Loss } from "./scenario.ts";
import { survivingRanges } from "./surviving-ranges.ts";
import { siteDomains } from "./topology.ts";
import { LossKind } from "./scenario.ts";

/** Acknowledged sequences some holder has but a required scenario would lose: where a copy is missing. */
export interface CoverageGap {
  readonly scenario: string;
  readonly lane: string;
  readonly gap: RangeSet;
  /** False for a scenario the contract does not require: closing it is optional work. */
  readonly required: boolean;
}

/**
 * For every required scenario (and, with `optional`, every other scenario too) and lane: the
 * sequences up to `upTo[lane]` that some holder retains (so a copy is possible) but that would not
 * survive the scenario. Closing these gaps is what repair is for — after a restart emptied a
 * holder, after a declared failure, after anything that left a single copy. Pure.
 */
export function coverageGaps(
  state: EvaluationState,
  upTo: Readonly<Record<string, number>>,
  opts: { readonly optional?: boolean } = {},
): CoverageGap[] {
  const out: CoverageGap[] = [];
  for (const lane of Object.keys(state.source.lanes)) {
    const limit = Math.min(upTo[lane] ?? 0, state.source.lanes[lane] ?? 0);
    if (limit < 1) continue;
    let held = RangeSet.EMPTY;
    for (const h of state.holders) for (const c of h.claims) if (c.lane === lane) held = held.union(c.ranges);
    held = held.intersect(RangeSet.of(1, limit));
    if (held.isEmpty) continue;
    for (const s of state.scenarios) {
      if (!s.required && opts.optional !== true) continue;
      const gap = held.subtract(survivingRanges(state, s.losses, lane));
      if (!gap.isEmpty) out.push({ scenario: s.name, lane, gap, required: s.required });
    }
  }
  return out;
}

/** True when a copy at `siteId` (in RAM) would survive `losses`. Pure. */
export function ramSurvivesAt(state: EvaluationState, siteId: string, losses: readonly Loss[]): boolean {
  const site = state.sites.find((s) => s.id === siteId);
  if (site === undefined) return false;
  const domains = siteDomains(site);
  return losses.every((l) => !domains.has(l.domain) || l.kind === LossKind.partition);
}
