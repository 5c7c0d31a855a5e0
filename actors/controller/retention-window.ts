import { RangeSet } from "../../lanes/index.ts";
import type { CommitRun } from "../../policies/index.ts";

/**
 * A contract's retention window: the holders it names (every holder when none is named) keep each
 * acknowledged sequence until `windowMs` after the writer committed it, whatever the scenarios
 * alone would release (e.g. to serve point-in-time reads or audits from the WAL).
 */
export interface RetentionWindow {
  readonly windowMs: number;
  readonly holders?: readonly string[];
}

/**
 * The part of `ranges` (of `lane`) still inside the window at `asOfMs`, and until when it must be
 * kept (the newest commit among it plus the window). Commit times come from the writer's commit
 * runs; a sequence no run dates takes the time `sightings` give it (when the controller first saw
 * it retained: it was committed by then), and failing that `unknownCommittedAtMs` — never a time
 * that makes it old before its commit is known to be. Pure.
 */
export function heldByRetention(
  w: RetentionWindow,
  commits: readonly CommitRun[],
  lane: string,
  ranges: RangeSet,
  asOfMs: number,
  unknownCommittedAtMs: number,
  sightings: readonly CommitRun[] = [],
): { held: RangeSet; untilMs: number } {
  let held = RangeSet.EMPTY;
  let newest = -Infinity;
  let unknown = ranges;
  // Exact commit runs first; sightings only date what no run does.
  for (const runs of [commits, sightings]) {
    const described = unknown;
    for (const c of runs) {
      if (c.lane !== lane) continue;
      const part = described.intersect(RangeSet.of(c.first, c.last));
      if (part.isEmpty) continue;
      unknown = unknown.subtract(part);
      if (c.committedAtMs + w.windowMs <= asOfMs) continue;
      held = held.union(part);
      newest = Math.max(newest, c.committedAtMs);
    }
  }
  if (!unknown.isEmpty && unknownCommittedAtMs + w.windowMs > asOfMs) {
    held = held.union(unknown);
    newest = Math.max(newest, unknownCommittedAtMs);
  }
  return { held, untilMs: held.isEmpty ? asOfMs : newest + w.windowMs };
}

/**
 * The lowest sequence per lane whose commit is still inside the window minus one: commit history
 * above it must stay exact (folding runs keeps the oldest time and would end the window early).
 * Pure.
 */
export function retentionFloor(
  w: RetentionWindow,
  commits: readonly CommitRun[],
  lanes: readonly string[],
  asOfMs: number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const lane of lanes) {
    let low = Infinity;
    for (const c of commits) if (c.lane === lane && c.committedAtMs + w.windowMs > asOfMs) low = Math.min(low, c.first);
    if (Number.isFinite(low)) out[lane] = low - 1;
  }
  return out;
}
