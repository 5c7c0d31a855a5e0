import { foldControlEntry, INITIAL_CONTROL_STATE, type ControlLogEntry, type ControlState } from "../custody/index.ts";
import { RangeSet } from "../lanes/index.ts";
import type { HoldTruth } from "./invariants.ts";

/**
 * The world's control log as the checks see it: every committed entry folded the instant it is
 * appended (before the committer hears back, so before any frontier built on it is published),
 * and for each hold what the log had already released at each holder when the hold was placed
 * (a hold cannot take back a release committed before it). The actors never see this.
 */
export class ControlLogTruth {
  private state: ControlState = INITIAL_CONTROL_STATE;
  private readonly releasedAtPlacement = new Map<string, Readonly<Record<string, RangeSet>>>();
  private holdsCache: { readonly of: ControlState; readonly holds: readonly HoldTruth[] } | undefined;
  private releasedCache:
    { readonly of: ControlState; readonly released: Readonly<Record<string, RangeSet>> } | undefined;

  constructor(
    private readonly volume: string,
    private readonly lane: string,
  ) {}

  /** A committed entry, in log order. */
  fold(entry: ControlLogEntry): void {
    const before = this.state;
    this.state = foldControlEntry(before, entry);
    const e = entry.event;
    if (e.type === "hold_ranges" && before.holds[e.holdId] === undefined && this.state.holds[e.holdId] !== undefined) {
      this.releasedAtPlacement.set(e.holdId, this.releasedByHolder(before));
    }
  }

  /** What the log has released at `holderId` on this lane (its committed release frontier). */
  committed(holderId: string): RangeSet {
    if (this.releasedCache?.of !== this.state)
      this.releasedCache = { of: this.state, released: this.releasedByHolder(this.state) };
    return this.releasedCache.released[holderId] ?? RangeSet.EMPTY;
  }

  /** The holds on this lane that stand now, each with what was released before it was placed. */
  holds(): readonly HoldTruth[] {
    if (this.holdsCache?.of === this.state) return this.holdsCache.holds;
    const holds = Object.values(this.state.holds)
      .filter((h) => h.volume === this.volume && h.lane === this.lane)
      .map((h) => ({
        holdId: h.holdId,
        ranges: h.ranges,
        holders: h.holders,
        releasedBefore: this.releasedAtPlacement.get(h.holdId) ?? {},
      }));
    this.holdsCache = { of: this.state, holds };
    return holds;
  }

  /** Released ranges per holder over every obligation of this lane. */
  private releasedByHolder(s: ControlState): Readonly<Record<string, RangeSet>> {
    const out: Record<string, RangeSet> = {};
    for (const o of Object.values(s.obligations)) {
      if (o.volume !== this.volume || o.lane !== this.lane) continue;
      for (const [holder, ranges] of Object.entries(o.released))
        out[holder] = (out[holder] ?? RangeSet.EMPTY).union(ranges);
    }
    return out;
  }
}
