import { RangeSet } from "../../lanes/index.ts";

/**
 * When each range of a lane was last sent to one downstream receiver, so a sender can tell a
 * unit still in flight from one that was lost: a unit not receipted a while after its last send is
 * due again (NATS delivers at most once; a receiver may restart and forget). Pure bookkeeping, no
 * clock of its own: callers pass the time. Entries are kept in send order and pruned as ranges are
 * receipted or dropped, so memory follows what is still unreceipted.
 */
export class SendLog {
  /** Sends in time order: each entry names the ranges whose latest send happened at `at`. */
  private entries: { at: number; seqs: RangeSet }[] = [];

  /** Records that `first..last` was (re-)sent at `at` (supersedes any earlier send of those sequences). */
  note(first: number, last: number, at: number): void {
    const seqs = RangeSet.of(first, last);
    const tail = this.entries[this.entries.length - 1];
    if (tail !== undefined && tail.at === at) tail.seqs = tail.seqs.union(seqs);
    else this.entries.push({ at, seqs });
  }

  /** Sequences of `pending` that are due: never sent, or last sent at or before `now - afterMs`. */
  due(pending: RangeSet, now: number, afterMs: number): RangeSet {
    let recent = RangeSet.EMPTY;
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i]!;
      if (e.at <= now - afterMs) break;
      recent = recent.union(e.seqs);
    }
    return pending.subtract(recent);
  }

  /** Forgets sequences that no longer need tracking (receipted or dropped); keeps the rest. */
  forget(seqs: RangeSet): void {
    if (seqs.isEmpty || this.entries.length === 0) return;
    const kept: { at: number; seqs: RangeSet }[] = [];
    for (const e of this.entries) {
      const rest = e.seqs.intersects(seqs) ? e.seqs.subtract(seqs) : e.seqs;
      if (!rest.isEmpty) kept.push({ at: e.at, seqs: rest });
    }
    this.entries = kept;
  }

  /** Forgets every send (the receiver restarted, or started a new credit window: nothing sent before counts). */
  reset(): void {
    this.entries = [];
  }

  /** Number of send entries kept (diagnostics and memory tests). */
  get size(): number {
    return this.entries.length;
  }
}
