import { RangeSet } from "../../lanes/index.ts";

/** One unit the writer still retains: its complete `unit` encoding and its credited bytes. */
export interface RetainedUnit {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly data: Uint8Array;
  readonly bytes: number;
}

/**
 * The units of one lane the writer has sent but cannot yet forget: until every first-hop holder's
 * current incarnation has receipted a unit, the writer is the only place that can send it again
 * (the unit may be lost on the wire, or the holder may restart empty). Units are kept in sequence
 * order; memory is the encoded bytes retained, which the writer bounds (`bytes`).
 */
export class UnitRetention {
  private units: RetainedUnit[] = [];
  private head = 0;
  private retainedBytes = 0;

  /** Encoded bytes retained. */
  get bytes(): number {
    return this.retainedBytes;
  }

  /** Units retained. */
  get count(): number {
    return this.units.length - this.head;
  }

  /** Sequences retained. */
  seqs(): RangeSet {
    let out = RangeSet.EMPTY;
    for (let i = this.head; i < this.units.length; i++) out = out.add(this.units[i]!.firstSeq, this.units[i]!.lastSeq);
    return out;
  }

  /**
   * Whether the unit starting at `firstSeq` (one this retention was given) is still retained: only
   * a prefix is ever dropped, so it is unless the oldest retained unit starts above it.
   */
  stillRetains(firstSeq: number): boolean {
    return this.head < this.units.length && this.units[this.head]!.firstSeq <= firstSeq;
  }

  /** Adds a unit above every retained one (units are cut in sequence order). */
  add(u: RetainedUnit): void {
    this.units.push(u);
    this.retainedBytes += u.data.byteLength;
  }

  /** Retained units lying wholly inside `seqs`, in order. */
  within(seqs: RangeSet): RetainedUnit[] {
    const out: RetainedUnit[] = [];
    for (let i = this.head; i < this.units.length; i++) {
      const u = this.units[i]!;
      if (seqs.covers(u.firstSeq, u.lastSeq)) out.push(u);
    }
    return out;
  }

  /**
   * Forgets units wholly inside `done` (receipted by every first hop). Only a prefix is dropped:
   * a unit above one still needed stays until that one goes too, which keeps the structure a queue.
   */
  dropPrefix(done: RangeSet): RangeSet {
    let dropped = RangeSet.EMPTY;
    while (this.head < this.units.length) {
      const u = this.units[this.head]!;
      if (!done.covers(u.firstSeq, u.lastSeq)) break;
      this.retainedBytes -= u.data.byteLength;
      dropped = dropped.add(u.firstSeq, u.lastSeq);
      this.head++;
    }
    if (this.head > 0 && this.head * 2 >= this.units.length) {
      this.units = this.units.slice(this.head);
      this.head = 0;
    }
    return dropped;
  }
}
