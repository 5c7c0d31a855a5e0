import { CustodyError } from "../core/index.ts";
import { GrowingRangeSet } from "./growing-range-set.ts";
import { RangeSet } from "./range-set.ts";
import type { TransportUnit } from "./transport-unit.ts";

/** What acceptance of a unit meant for the lane. */
export const UnitVerdict = {
  /** New sequences, contiguous with the accepted prefix. */
  accepted: "accepted",
  /** New sequences beyond a gap: retained and reported until the gap fills. */
  held: "held",
  /** Every sequence was already received (retained or released): nothing changed. */
  duplicate: "duplicate",
} as const;
export type UnitVerdict = (typeof UnitVerdict)[keyof typeof UnitVerdict];

/** Thrown for a unit from a writer term older than the lane's current term (fenced writer). */
export class StaleTermError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("stale_term", "unit comes from a stale writer term", detail);
  }
}

/** Thrown for a unit that partly overlaps sequences already received (unit boundaries disagree). */
export class OverlappingUnitError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("overlapping_unit", "unit partly overlaps sequences already received", detail);
  }
}

/** Thrown when a unit is offered to the log of another lane. */
export class WrongLaneError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("wrong_lane", "unit belongs to another volume or lane", detail);
  }
}

/** The lane's acceptance state after an operation. */
export interface LaneProgress {
  readonly verdict: UnitVerdict;
  /** Highest `x` with every sequence `base..x` received (`base - 1` when none). */
  readonly contiguousThrough: number;
  /** Missing sequences between `base` and the highest received sequence. */
  readonly holes: RangeSet;
}

/**
 * Per-lane acceptance state of one holder: which sequences it retains, which it has released,
 * the contiguous prefix from `base`, and the holes — never a bare high-water mark.
 * `classify` is pure; `accept` changes state only for a unit that `classify` accepts.
 * Duplicates are idempotent; released ranges never reappear (a re-sent released unit is a duplicate).
 */
export class LaneLog {
  readonly volume: string;
  readonly lane: string;
  /** First sequence this holder is responsible for. */
  readonly base: number;
  private termValue: number;
  /** Per writer term: the lowest sequence accepted under it (where, as far as this log knows, it begins). */
  private readonly termLowest = new Map<number, number>();
  private readonly retainedSet = new GrowingRangeSet();
  private releasedSet: RangeSet = RangeSet.EMPTY;
  /** retained ∪ released, kept up to date: every admission consults it. */
  private readonly receivedSet = new GrowingRangeSet();

  constructor(volume: string, lane: string, opts: { base?: number; term?: number } = {}) {
    this.volume = volume;
    this.lane = lane;
    this.base = opts.base ?? 1;
    this.termValue = opts.term ?? 0;
  }

  /** Highest writer term accepted so far; an older term's units are refused where a newer term begins. */
  get term(): number {
    return this.termValue;
  }

  /** Sequences currently held in custody. */
  get retained(): RangeSet {
    return this.retainedSet.value;
  }

  /** Sequences released after their obligations ended; they never reappear. */
  get released(): RangeSet {
    return this.releasedSet;
  }

  /** Every sequence ever received (retained or released). */
  get received(): RangeSet {
    return this.receivedSet.value;
  }

  /** Highest `x` with `base..x` all received, or `base - 1`. */
  contiguousThrough(): number {
    return this.receivedSet.contiguousThrough(this.base);
  }

  /** Gaps between `base` and the highest received sequence (the out-of-order units wait on these). */
  holes(): RangeSet {
    const rx = this.received;
    return rx.max === undefined ? RangeSet.EMPTY : rx.holes(this.base, rx.max);
  }

  /**
   * What `accept(u)` would do, without changing anything. Throws WrongLaneError, StaleTermError,
   * OverlappingUnitError. The caller validates the digest first (validateTransportUnit).
   */
  classify(u: TransportUnit): UnitVerdict {
    if (u.volume !== this.volume || u.lane !== this.lane) {
      throw new WrongLaneError({ expected: `${this.volume}.${this.lane}`, got: `${u.volume}.${u.lane}` });
    }
    if (u.term < this.termValue && this.fencedByNewerTerm(u.term, u.lastSeq)) {
      throw new StaleTermError({ volume: u.volume, lane: u.lane, term: u.term, current: this.termValue });
    }
    const rx = this.receivedSet;
    if (rx.covers(u.firstSeq, u.lastSeq) || u.lastSeq < this.base) return UnitVerdict.duplicate;
    if (rx.overlaps(u.firstSeq, u.lastSeq)) {
      throw new OverlappingUnitError({ firstSeq: u.firstSeq, lastSeq: u.lastSeq, received: rx.toString() });
    }
    return u.firstSeq <= this.contiguousThrough() + 1 ? UnitVerdict.accepted : UnitVerdict.held;
  }

  /**
   * True when a newer term than `term` already reaches down to `lastSeq`: from its first sequence
   * on, the log belongs to the newer writer, and an older term's unit there is a fenced writer's.
   * Below it the two histories are one (a restarted writer re-ships its unconfirmed units under its
   * new term, with the same records), so an older term's unit is still custody there.
   */
  private fencedByNewerTerm(term: number, lastSeq: number): boolean {
    for (const [t, lowest] of this.termLowest) if (t > term && lowest <= lastSeq) return true;
    return false;
  }

  /** Accepts `u` (same throws as `classify`, with no state change when it throws). */
  accept(u: TransportUnit): LaneProgress {
    const verdict = this.record(u);
    return { verdict, contiguousThrough: this.contiguousThrough(), holes: this.holes() };
  }

  /** `accept` without the progress report (the holder's admission path needs only the verdict). */
  record(u: TransportUnit): UnitVerdict {
    const verdict = this.classify(u);
    if (verdict !== UnitVerdict.duplicate) {
      this.retainedSet.add(u.firstSeq, u.lastSeq);
      this.receivedSet.add(u.firstSeq, u.lastSeq);
      if (u.term > this.termValue) this.termValue = u.term;
      const low = this.termLowest.get(u.term);
      if (low === undefined || u.firstSeq < low) this.termLowest.set(u.term, u.firstSeq);
    }
    return verdict;
  }

  /** Moves the retained part of `ranges` to released; returns what was actually released. */
  release(ranges: RangeSet): RangeSet {
    const now = this.retainedSet.value.intersect(ranges);
    this.retainedSet.set(this.retainedSet.value.subtract(now));
    this.releasedSet = this.releasedSet.union(now);
    return now;
  }
}
