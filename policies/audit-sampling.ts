import { RangeSet } from "../lanes/index.ts";
import type { Random } from "../core/index.ts";

/**
 * Which units a retention audit asks about, and whose copy the answer is checked against. Pure:
 * randomness comes from the caller's Random (seeded in tests).
 */

/** The `k` (at most) distinct sequences drawn uniformly from `ranges`. Pure given `random`. */
export function sampleSeqs(ranges: RangeSet, k: number, random: Random): RangeSet {
  const total = ranges.count;
  if (total === 0 || k <= 0) return RangeSet.EMPTY;
  if (total <= k) return ranges;
  const runs = ranges.ranges();
  let out = RangeSet.EMPTY;
  // Draws with rejection of repeats; k is far below total here, so few draws repeat.
  for (let draws = 0; out.count < k && draws < k * 8; draws++) {
    let index = random.int(0, total - 1);
    for (const r of runs) {
      const size = r.last - r.first + 1;
      if (index < size) {
        out = out.add(r.first + index);
        break;
      }
      index -= size;
    }
  }
  return out;
}

/** One planned challenge: the audited holder, the holder whose copy checks it, and the sequences. */
export interface AuditPlan {
  readonly holder: string;
  readonly reference: string;
  readonly seqs: RangeSet;
}

/**
 * Plans one challenge of `holder` on one lane: a reference holder is drawn among the others that
 * claim some of the same sequences — preferring those not currently unproven (a reference that
 * failed its own audit would make an honest answer look wrong) — and up to `k` sequences are drawn
 * from what both claim. Undefined when no other holder claims any of them (nothing to check against).
 */
export function planAudit(
  holder: string,
  claims: ReadonlyMap<string, RangeSet>,
  unproven: ReadonlySet<string>,
  k: number,
  random: Random,
): AuditPlan | undefined {
  const mine = claims.get(holder);
  if (mine === undefined || mine.isEmpty) return undefined;
  const others = [...claims.entries()]
    .filter(([id, r]) => id !== holder && r.intersects(mine))
    .map(([id]) => id)
    .sort();
  const trusted = others.filter((id) => !unproven.has(id));
  const pool = trusted.length > 0 ? trusted : others;
  if (pool.length === 0) return undefined;
  const reference = random.pick(pool);
  return { holder, reference, seqs: sampleSeqs(mine.intersect(claims.get(reference)!), k, random) };
}
