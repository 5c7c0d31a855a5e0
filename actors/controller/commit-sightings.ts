import { RangeSet } from "../../lanes/index.ts";
import type { CommitRun } from "../../policies/index.ts";

/**
 * When the controller first saw sequences retained that no writer commit run dates yet: a bound
 * on their commit time from above (the writer dates a sequence when it writes it, before any
 * holder gets it), so a retention window never takes such a sequence as old. Receipts routinely
 * arrive before the periodic writer-progress message that dates them, and a controller that
 * started late never gets the runs of what was written before it.
 */
export class CommitSightings {
  /** First sightings as runs (`committedAtMs` = when first seen, `bytesPerSeq` 0), oldest first. */
  runs: CommitRun[] = [];
  private readonly seen = new Map<string, RangeSet>();

  /** Records `ranges` of `lane` as seen at `atMs`, except what `dated` already dates or was seen before. */
  note(lane: string, ranges: RangeSet, dated: RangeSet, atMs: number): void {
    const before = this.seen.get(lane) ?? RangeSet.EMPTY;
    const fresh = ranges.subtract(dated).subtract(before);
    if (fresh.isEmpty) return;
    this.seen.set(lane, before.union(fresh));
    for (const r of fresh.ranges())
      this.runs.push({ lane, first: r.first, last: r.last, committedAtMs: atMs, bytesPerSeq: 0 });
  }

  /** Forgets sightings a commit run now dates, and those below `horizon` (no holder retains them). */
  prune(dated: (lane: string) => RangeSet, horizon: Readonly<Record<string, number>>): void {
    const out: CommitRun[] = [];
    for (const s of this.runs) {
      const keep = RangeSet.of(s.first, s.last)
        .subtract(dated(s.lane))
        .subtract(below(horizon[s.lane] ?? 0));
      for (const r of keep.ranges()) out.push({ ...s, first: r.first, last: r.last });
    }
    this.runs = out;
    for (const [lane, seen] of this.seen)
      this.seen.set(lane, seen.subtract(dated(lane)).subtract(below(horizon[lane] ?? 0)));
  }
}

const below = (seq: number) => (seq > 0 ? RangeSet.of(0, seq - 1) : RangeSet.EMPTY);
