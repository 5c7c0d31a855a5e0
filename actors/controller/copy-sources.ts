import { RangeSet } from "../../lanes/index.ts";
import type { EvaluationState } from "../../policies/index.ts";
import type { CopySource } from "../repair/index.ts";

/**
 * Holders that recently failed a copy's fetch (timed out or refused), remembered for `windowMs`.
 * A fetch whose request or reply was lost, or whose source crashed or was cut off mid-fetch, waits
 * out its whole timeout; a source asked first again after that can cost the next copy the same
 * wait (sim seed 996059: two 5 s stalls in a row at the one copy target a scenario had).
 * Bounded by the number of holders that failed within the window.
 */
export class SourceSuspicion {
  private readonly failedAt = new Map<string, number>();

  constructor(private readonly windowMs: number) {}

  /** `holder` failed a fetch at `atMs`. */
  failed(holder: string, atMs: number): void {
    this.failedAt.set(holder, atMs);
  }

  /** True while `holder`'s last failure is younger than the window; an older one is forgotten. */
  suspect(holder: string, nowMs: number): boolean {
    const at = this.failedAt.get(holder);
    if (at === undefined) return false;
    if (nowMs - at < this.windowMs) return true;
    this.failedAt.delete(holder);
    return false;
  }
}

/**
 * The holders a copy of `ranges` of `lane` to `target` reads from, best first: each with the part
 * of `ranges` its claims retain (holders retaining none of it left out); holders not `suspect`
 * before suspect ones, then the one retaining the most, then by id. Pure.
 */
export function copySources(
  state: EvaluationState,
  lane: string,
  ranges: RangeSet,
  target: string,
  suspect: (holder: string) => boolean,
): CopySource[] {
  return state.holders
    .filter((h) => h.id !== target)
    .map((h) => ({
      holderId: h.id,
      retained: h.claims
        .filter((c) => c.lane === lane)
        .reduce((r, c) => r.union(c.ranges), RangeSet.EMPTY)
        .intersect(ranges),
    }))
    .filter((x) => !x.retained.isEmpty)
    .sort(
      (x, y) =>
        Number(suspect(x.holderId)) - Number(suspect(y.holderId)) ||
        y.retained.count - x.retained.count ||
        (x.holderId < y.holderId ? -1 : 1),
    );
}
