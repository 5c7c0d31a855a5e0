import { RangeSet } from "../../lanes/index.ts";
import { HolderStatus } from "../../custody/index.ts";
import type { CopySource } from "./copy-over-nats.ts";
import type { RepairView, ReplacementTransfer } from "./repair-port.ts";
import type { LaneRanges } from "./repair-state.ts";

/**
 * The repair's decisions, as pure functions of the controller's view and the repair's data: what
 * is missing, whom to copy it from, whether the replacement's receipts cover it, which transfers
 * make the replacement responsible, and which protections to end. No I/O, no clock (times are
 * arguments).
 */

/** The parts of a repair's settings `missingCoverage` reads. */
export interface CoverageQuestion {
  readonly lanes: readonly string[];
  readonly failed: readonly string[];
}

/**
 * Lane → ranges the failed holders were still covering: what their last receipts retained, minus
 * what the control log had already released for them (that coverage was judged redundant). Pure.
 */
export function missingCoverage(view: RepairView, inp: CoverageQuestion): Record<string, RangeSet> {
  const out: Record<string, RangeSet> = {};
  for (const lane of inp.lanes) {
    const released = view.lanes[lane]?.released ?? {};
    let r = RangeSet.EMPTY;
    for (const h of view.holdings) {
      if (h.lane !== lane || !inp.failed.includes(h.holderId)) continue;
      r = r.union(h.retained.subtract(released[h.holderId] ?? RangeSet.EMPTY));
    }
    out[lane] = r;
  }
  return out;
}

/** Lane → RangeSet as plain `[first, last]` pairs. */
export function laneRangesOf(sets: Readonly<Record<string, RangeSet>>): LaneRanges {
  return Object.fromEntries(Object.entries(sets).map(([lane, r]) => [lane, r.toJSON()]));
}

/** The ranges of `lane` as a RangeSet (empty when the lane has none). */
export function rangesOf(missing: LaneRanges, lane: string): RangeSet {
  const pairs = missing[lane];
  return pairs === undefined ? RangeSet.EMPTY : RangeSet.fromJSON(pairs);
}

/** The id of the protection a repair holds on one lane while it reads it. */
export const protectionId = (repairId: string, lane: string): string => `${repairId}-${lane}`;

/** The protections to end when a repair stops: one per lane it surveyed. */
export function protectionIds(repairId: string, missing: LaneRanges): string[] {
  return Object.keys(missing).map((lane) => protectionId(repairId, lane));
}

/** Who a copy must not read from (the failed holders) nor count as a source (the replacement). */
export interface CopyExclusions {
  readonly failed: readonly string[];
  readonly replacement: string;
}

/**
 * The survivors to read `ranges` of `lane` from: holders whose receipts are fresh at `nowMs`, of an
 * active admitted incarnation, neither failed nor the replacement; each with what it retains of
 * `ranges`, the largest first (ties by id).
 */
export function copySources(
  view: RepairView,
  lane: string,
  ranges: RangeSet,
  who: CopyExclusions,
  nowMs: number,
): CopySource[] {
  const by = new Map<string, RangeSet>();
  for (const h of view.holdings) {
    if (h.lane !== lane || who.failed.includes(h.holderId) || h.holderId === who.replacement) continue;
    const admitted = view.holders[h.holderId];
    if (admitted?.status !== HolderStatus.active || admitted.incarnation !== h.incarnation) continue;
    if (nowMs - h.issuedAt > view.staleAfterMs) continue;
    by.set(h.holderId, (by.get(h.holderId) ?? RangeSet.EMPTY).union(h.retained.intersect(ranges)));
  }
  return [...by]
    .map(([holderId, retained]) => ({ holderId, retained }))
    .sort((a, b) => b.retained.count - a.retained.count || (a.holderId < b.holderId ? -1 : 1));
}

/** True when the view shows `holderId` retaining every missing range of every lane. */
export function replacementCovers(view: RepairView, missing: LaneRanges, holderId: string): boolean {
  return Object.keys(missing).every((lane) => {
    let r = RangeSet.EMPTY;
    for (const h of view.holdings) if (h.lane === lane && h.holderId === holderId) r = r.union(h.retained);
    return r.coversAll(rangesOf(missing, lane));
  });
}

/** What activation asks for: one transfer per lane with missing ranges and failed holder, in that order. */
export function activationTransfers(
  t: { readonly repairId: string; readonly lanes: readonly string[]; readonly failed: readonly string[] },
  replacement: string,
  missing: LaneRanges,
): ReplacementTransfer[] {
  const out: ReplacementTransfer[] = [];
  for (const lane of t.lanes) {
    const ranges = rangesOf(missing, lane);
    if (ranges.isEmpty) continue;
    for (const from of t.failed)
      out.push({ transferId: `${t.repairId}-${lane}-${from}`, lane, fromHolder: from, toHolder: replacement, ranges });
  }
  return out;
}
