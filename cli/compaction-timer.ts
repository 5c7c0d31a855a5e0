import { setTimeout as sleep } from "node:timers/promises";
import type { CompactionResult, ControlLogCompactor } from "../custody/index.ts";

/** What the timer reports: each compaction made, and each one that failed (the timer goes on). */
export interface CompactionTimerReport {
  readonly compacted: (r: CompactionResult) => void;
  readonly failed: (err: unknown) => void;
}

/**
 * `custody log compact --every S`: the operator's compaction as a process of its own, so the log
 * stays bounded without anybody's cron. Every `everyMs` it compacts when enough entries were
 * committed since the newest snapshot (ControlLogCompactor.compactIfDue); a failure (the stream
 * is electing a leader, a controller won the position every try) is reported and tried again at
 * the next tick, never fatal. It runs until `signal` aborts, and never overlaps two compactions.
 */
export async function runCompactionTimer(
  compactor: ControlLogCompactor,
  everyMs: number,
  report: CompactionTimerReport,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const r = await compactor.compactIfDue();
      if (r !== undefined) report.compacted(r);
    } catch (err) {
      report.failed(err);
    }
    // Aborting the wait rejects it: the loop then sees the signal and ends.
    await sleep(everyMs, undefined, { signal }).catch(() => undefined);
  }
}
