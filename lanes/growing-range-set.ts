import { RangeSet } from "./range-set.ts";

/**
 * A mutable holder of a RangeSet for the admission hot path: units usually arrive in order, each
 * extending the last run, and that extension is two number writes instead of a new set. Every
 * other change goes through RangeSet. `value` is the immutable set (built on first read after a
 * change, then shared until the next one), so readers never see it move under them.
 */
export class GrowingRangeSet {
  /** Every run but the last. */
  private head: RangeSet = RangeSet.EMPTY;
  /** The last run (`tailFirst <= tailLast`), or none when `tailFirst` is -1. */
  private tailFirst = -1;
  private tailLast = -1;
  private built: RangeSet | undefined = RangeSet.EMPTY;

  constructor(initial: RangeSet = RangeSet.EMPTY) {
    this.set(initial);
  }

  /** The current set (immutable). */
  get value(): RangeSet {
    if (this.built === undefined) {
      this.built =
        this.tailFirst < 0
          ? this.head
          : RangeSet.from([...this.head.ranges(), { first: this.tailFirst, last: this.tailLast }]);
    }
    return this.built;
  }

  /** Replaces the whole set. */
  set(s: RangeSet): void {
    const runs = s.ranges();
    const last = runs[runs.length - 1];
    if (last === undefined) {
      this.head = RangeSet.EMPTY;
      this.tailFirst = this.tailLast = -1;
    } else {
      this.head = runs.length === 1 ? RangeSet.EMPTY : RangeSet.from(runs.slice(0, -1));
      this.tailFirst = last.first;
      this.tailLast = last.last;
    }
    this.built = s;
  }

  /** Adds `first..last`; throws InvalidRangeError on a malformed range (like RangeSet.add). */
  add(first: number, last: number): void {
    if (this.tailFirst >= 0 && first === this.tailLast + 1 && Number.isSafeInteger(last) && last >= first) {
      this.tailLast = last;
      this.built = undefined;
      return;
    }
    this.set(this.value.add(first, last));
  }

  /** True when every sequence of `first..last` is in the set. */
  covers(first: number, last: number): boolean {
    if (this.tailFirst >= 0 && first >= this.tailFirst) return last <= this.tailLast;
    return this.head.covers(first, last);
  }

  /** True when any sequence of `first..last` is in the set. */
  overlaps(first: number, last: number): boolean {
    if (this.tailFirst >= 0 && last >= this.tailFirst && first <= this.tailLast) return true;
    return this.head.overlaps(first, last);
  }

  /** Highest `x` with every sequence `base..x` in the set, or `base - 1` (as RangeSet.contiguousThrough). */
  contiguousThrough(base: number): number {
    if (this.tailFirst >= 0 && base >= this.tailFirst) return base <= this.tailLast ? this.tailLast : base - 1;
    return this.head.contiguousThrough(base);
  }

  get isEmpty(): boolean {
    return this.tailFirst < 0;
  }
}
