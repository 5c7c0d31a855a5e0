import type { RangeSet } from "../../lanes/index.ts";

/** Retries of an unclaimed copy, past the grace, after which a target counts as not taking copies. */
const STRIKES = 3;

interface Delivery {
  /** What the latest copy to the target offered. */
  readonly ranges: RangeSet;
  /** When the oldest of the copies still unclaimed was offered. */
  readonly firstAt: number;
  strikes: number;
}

/**
 * Copy targets that are sent the same sequences again and again without ever claiming them (a
 * holder whose arena is full refuses every transfer offer; one that drops what it is offered).
 * A copy only offers units; whether the target took them shows only in its receipts. Once the
 * ranges a target was offered are still a gap `graceMs` after the first offer, each further copy
 * of them is a strike, and after STRIKES the target is passed over for `windowMs`: the gap then
 * goes to another holder, or brings in a standby (sim seed 998428: the one vault standby filled
 * its arena and coverage repair re-sent it the same units every retry for 30 s). Keyed by
 * `target/lane`; bounded by holders × lanes. Pure (times are passed in).
 */
export class CopyTargets {
  private readonly deliveries = new Map<string, Delivery>();
  private readonly passedOverUntil = new Map<string, number>();

  constructor(
    private readonly graceMs: number,
    private readonly windowMs: number,
  ) {}

  /** A copy to `key` offered `copied` at `atMs`. */
  offered(key: string, copied: RangeSet, atMs: number): void {
    if (copied.isEmpty) return;
    const prev = this.deliveries.get(key);
    const again = prev !== undefined && copied.intersects(prev.ranges);
    this.deliveries.set(key, {
      ranges: copied,
      firstAt: again ? prev.firstAt : atMs,
      strikes: again ? prev.strikes : 0,
    });
  }

  /**
   * A copy of `ranges` to `key` is about to start. True when this makes the target one that does
   * not take copies (the copy should not start; the target is passed over from now on).
   */
  retrying(key: string, ranges: RangeSet, atMs: number): boolean {
    const d = this.deliveries.get(key);
    if (d === undefined) return false;
    if (!ranges.intersects(d.ranges)) {
      this.deliveries.delete(key);
      return false;
    }
    if (atMs - d.firstAt < this.graceMs) return false;
    if (++d.strikes < STRIKES) return false;
    this.deliveries.delete(key);
    this.passedOverUntil.set(key, atMs + this.windowMs);
    return true;
  }

  /** True while `key` is passed over; an expired entry is forgotten. */
  passedOver(key: string, atMs: number): boolean {
    const until = this.passedOverUntil.get(key);
    if (until === undefined) return false;
    if (atMs < until) return true;
    this.passedOverUntil.delete(key);
    return false;
  }
}
