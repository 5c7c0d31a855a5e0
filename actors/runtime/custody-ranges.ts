import type { Holding } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";

/**
 * Sequence ranges in process stats (`samples`), flattened [first, last, first, last, ...]: a
 * holder's retained ranges per lane, a controller's receipted ranges per holder and lane. These
 * are what a reader needs to tell whether every unit some holder retains is covered by a receipt
 * the controller verified (the demo's "settled" check).
 */

/** At most this many [first, last] runs per entry (the newest): bounds a stats reply. */
export const MAX_RANGE_RUNS = 1024;

/** Flattens the newest MAX_RANGE_RUNS runs of `ranges`. Pure. */
export function flatRuns(ranges: RangeSet): number[] {
  return ranges.toJSON().slice(-MAX_RANGE_RUNS).flat();
}

/** The inverse of `flatRuns` (pure); an odd trailing number is ignored. */
export function runsOf(flat: readonly number[] | undefined): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; flat !== undefined && i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}

/** The samples key of a controller's receipted ranges for one holder and lane. */
export const receiptedKey = (holder: string, lane: string): string => `receipted.${holder}.${lane}`;

/**
 * A controller's receipted ranges as samples (pure): per holder and lane, the sequences its
 * verified receipts show it retaining less what the control log released, residencies merged.
 */
export function receiptedSamples(holdings: readonly Holding[]): Record<string, number[]> {
  const merged = new Map<string, RangeSet>();
  for (const h of holdings) {
    const key = receiptedKey(h.holderId, h.lane);
    merged.set(key, (merged.get(key) ?? RangeSet.EMPTY).union(h.retained));
  }
  return Object.fromEntries([...merged].map(([k, r]) => [k, flatRuns(r)]));
}
