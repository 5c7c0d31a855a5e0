import { RangeSet } from "../../lanes/index.ts";
import type { CommitRun } from "../../policies/index.ts";
import type { RangePairs } from "./controller-ledger.ts";

/**
 * When the controller first saw sequences retained that no writer commit run dates yet: a bound
 * on their commit time from above (the writer dates a sequence when it writes it, before any
 * holder gets it), so a retention window never takes such a sequence as old. Receipts routinely
 * arrive before the periodic writer-progress message that dates them, and a controller that
 * started late never gets the runs of what was written before it. Plain data (see noteSighting).
 */
export interface SightingsState {
  /** First sightings as runs (`committedAtMs` = when first seen, `bytesPerSeq` 0), oldest first. */
  readonly runs: readonly CommitRun[];
  /** Per lane, every sequence sighted (as RangeSet pairs). */
  readonly seen: Readonly<Record<string, RangePairs>>;
}

export const NO_SIGHTINGS: SightingsState = { runs: [], seen: {} };

const seenIn = (s: SightingsState, lane: string): RangeSet => RangeSet.fromJSON(s.seen[lane] ?? []);

/** Records `ranges` of `lane` as seen at `atMs`, except what `dated` already dates or was seen before. Pure. */
export function noteSighting(
  s: SightingsState,
  lane: string,
  ranges: RangeSet,
  dated: RangeSet,
  atMs: number,
): SightingsState {
  const before = seenIn(s, lane);
  const fresh = ranges.subtract(dated).subtract(before);
  if (fresh.isEmpty) return s;
  const runs = [...s.runs];
  for (const r of fresh.ranges())
    runs.push({ lane, first: r.first, last: r.last, committedAtMs: atMs, bytesPerSeq: 0 });
  return { runs, seen: { ...s.seen, [lane]: before.union(fresh).toJSON() } };
}

/** Forgets sightings a commit run now dates, and those below `horizon` (no holder retains them). Pure. */
export function pruneSightings(
  s: SightingsState,
  dated: (lane: string) => RangeSet,
  horizon: Readonly<Record<string, number>>,
): SightingsState {
  const runs: CommitRun[] = [];
  for (const x of s.runs) {
    const keep = RangeSet.of(x.first, x.last)
      .subtract(dated(x.lane))
      .subtract(below(horizon[x.lane] ?? 0));
    for (const r of keep.ranges()) runs.push({ ...x, first: r.first, last: r.last });
  }
  const seen: Record<string, RangePairs> = {};
  for (const lane of Object.keys(s.seen))
    seen[lane] = seenIn(s, lane)
      .subtract(dated(lane))
      .subtract(below(horizon[lane] ?? 0))
      .toJSON();
  return { runs, seen };
}

/** The same bookkeeping kept in one place (for callers outside a machine). */
export class CommitSightings {
  state: SightingsState = NO_SIGHTINGS;

  get runs(): readonly CommitRun[] {
    return this.state.runs;
  }

  /** Records `ranges` of `lane` as seen at `atMs`, except what `dated` already dates or was seen before. */
  note(lane: string, ranges: RangeSet, dated: RangeSet, atMs: number): void {
    this.state = noteSighting(this.state, lane, ranges, dated, atMs);
  }

  /** Forgets sightings a commit run now dates, and those below `horizon` (no holder retains them). */
  prune(dated: (lane: string) => RangeSet, horizon: Readonly<Record<string, number>>): void {
    this.state = pruneSightings(this.state, dated, horizon);
  }
}

const below = (seq: number) => (seq > 0 ? RangeSet.of(0, seq - 1) : RangeSet.EMPTY);
