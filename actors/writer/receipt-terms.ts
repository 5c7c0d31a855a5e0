import { RangeSet } from "../../lanes/index.ts";

/**
 * What a receipt stated under `writerTerm` proves for a writer of term `ourTerm` whose history on
 * the lane starts at `firstSeq`, or undefined when nothing. Our own term proves all it states. A
 * newer term means we were fenced: after failover the same sequences belong to the newer history.
 * An older term (a holder that has not yet seen a unit of ours) still proves the shared history
 * below our first sequence — the units an earlier process of this writer left unconfirmed, which
 * we re-ship under their own term. Pure.
 */
export function provableByTerm(
  writerTerm: number,
  ourTerm: number,
  firstSeq: number,
  retained: RangeSet,
): RangeSet | undefined {
  if (writerTerm === ourTerm) return retained;
  const below = writerTerm < ourTerm ? retained.intersect(RangeSet.of(0, Math.max(0, firstSeq - 1))) : RangeSet.EMPTY;
  return below.isEmpty ? undefined : below;
}
