import type { OpenReceiptBatch, ReceiptBatches, ReceiptLink } from "./holder-state.ts";

/**
 * Per-lane receipt batching as pure functions over plain data (the machine keeps `ReceiptBatches`
 * in its context). A batch collects units admitted since the lane's last receipt and is due when it
 * holds `maxUnits` units or its oldest unit has waited `maxDelayMs` (the seal deadline that bounds
 * acknowledgement latency). Only units that passed validation are ever noted, so a receipt can never
 * claim a rejected unit. None of these mutates its input.
 */

export interface BatchPolicy {
  readonly maxUnits: number;
  readonly maxDelayMs: number;
}

/** Notes one admitted unit on `lane` at `nowMs`; `full` when that makes the batch due at once. */
export function noteAdmitted(
  b: ReceiptBatches,
  policy: BatchPolicy,
  lane: string,
  nowMs: number,
  link?: ReceiptLink,
): { batches: ReceiptBatches; full: boolean } {
  const was = b.open[lane];
  const links = link === undefined ? (was?.links ?? []) : [...(was?.links ?? []), link];
  const batch: OpenReceiptBatch = { units: (was?.units ?? 0) + 1, openedAt: was?.openedAt ?? nowMs, links };
  return { batches: { ...b, open: { ...b.open, [lane]: batch } }, full: batch.units >= policy.maxUnits };
}

/** Closes `lane`'s batch: what it covered (undefined when nothing was pending) and the batches left. */
export function takeBatch(b: ReceiptBatches, lane: string): { batches: ReceiptBatches; taken?: OpenReceiptBatch } {
  const taken = b.open[lane];
  if (taken === undefined) return { batches: b };
  const { [lane]: _closed, ...open } = b.open;
  return { batches: { ...b, open }, taken };
}

/** Lanes whose batch is full or whose delay has run out at `nowMs`. */
export function dueLanes(b: ReceiptBatches, policy: BatchPolicy, nowMs: number): string[] {
  return Object.entries(b.open)
    .filter(([, x]) => x.units >= policy.maxUnits || nowMs - x.openedAt >= policy.maxDelayMs)
    .map(([lane]) => lane);
}

/** The earliest time an open batch falls due, or undefined when nothing is pending. */
export function nextDeadline(b: ReceiptBatches, policy: BatchPolicy): number | undefined {
  let min: number | undefined;
  for (const x of Object.values(b.open)) {
    const t = x.openedAt + policy.maxDelayMs;
    if (min === undefined || t < min) min = t;
  }
  return min;
}
