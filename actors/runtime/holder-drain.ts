import { holderLaneKey } from "../../core/index.ts";
import type { Holder } from "../index.ts";
import type { RangeSet } from "../../lanes/index.ts";

/** What a stopping holder still held only in RAM when its drain ended, per lane (`volume/lane`). */
export type HolderDrainReport = Record<string, RangeSet>;

/**
 * The custody a holder would lose by stopping now: per lane, what it retains that is not on its
 * disk. A persisting holder drains by flushing (its spill stream survives the stop; the next
 * incarnation receipts it again); a RAM holder only by the control log releasing its ranges.
 */
export function ramOnlyCustody(holder: Holder): HolderDrainReport {
  const out: HolderDrainReport = {};
  for (const l of holder.lanes()) {
    const left = l.retained.subtract(l.diskResident);
    if (!left.isEmpty) out[holderLaneKey(l.volume, l.lane)] = left;
  }
  return out;
}

/**
 * Drains a holder before its process stops: it promises no more credit (units already credited
 * are still admitted), then waits until nothing it retains is held only in RAM — flushed to its
 * spill stream, or released by the control log — or until `deadlineMs`. Resolves with what is
 * still RAM-only (empty when drained).
 */
export async function drainHolder(holder: Holder, deadlineMs: number, pollMs = 50): Promise<HolderDrainReport> {
  holder.drain();
  const end = Date.now() + deadlineMs;
  for (;;) {
    const left = ramOnlyCustody(holder);
    if (Object.keys(left).length === 0 || Date.now() >= end) return left;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
