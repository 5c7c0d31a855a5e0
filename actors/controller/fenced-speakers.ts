import { CustodyError } from "../../core/index.ts";
import type { FencedStatus } from "../../transport/protocol/index.ts";

/** How long a superseded incarnation stays listed after its last receipt (ms). */
export const FENCED_SPEAKER_WINDOW_MS = 60_000;

/** At most this many incarnations are tracked (the oldest sighting goes first). */
const MAX_TRACKED = 64;

/** One superseded incarnation still speaking (plain data: it lives in the controller's context). */
export interface FencedSighting {
  readonly holder: string;
  readonly incarnation: number;
  readonly admitted: number;
  readonly lastAtMs: number;
  readonly batches: number;
}

/**
 * Superseded holder incarnations that still send receipts (issue #46). A receipt batch refused as
 * `stale_incarnation` names the holder, its incarnation and the one the control log admitted
 * since: a process that should have stopped (a fenced holder exits; one still speaking is stuck or
 * cannot read the log). The status document lists them (`fenced`), so an operator sees the old
 * process instead of a healthy-looking `custody ps` row. Pure: returns the new list (least recently
 * seen first), `seen` itself unchanged; anything but a `stale_incarnation` refusal returns `seen`.
 */
export function noteFencedSpeaker(
  seen: readonly FencedSighting[],
  err: unknown,
  atMs: number,
): readonly FencedSighting[] {
  if (!(err instanceof CustodyError) || err.code !== "stale_incarnation") return seen;
  const { holderId, incarnation, current } = err.detail as {
    holderId?: unknown;
    incarnation?: unknown;
    current?: unknown;
  };
  if (typeof holderId !== "string" || typeof incarnation !== "number" || typeof current !== "number") return seen;
  const prev = seen.find((s) => s.holder === holderId && s.incarnation === incarnation);
  const rest = seen.filter((s) => s !== prev && atMs - s.lastAtMs <= FENCED_SPEAKER_WINDOW_MS);
  const next: FencedSighting = {
    holder: holderId,
    incarnation,
    admitted: Math.max(current, prev?.admitted ?? 0),
    lastAtMs: atMs,
    batches: (prev?.batches ?? 0) + 1,
  };
  return [...rest.slice(Math.max(0, rest.length + 1 - MAX_TRACKED)), next];
}

/** The incarnations seen within FENCED_SPEAKER_WINDOW_MS of `nowMs`, by holder and incarnation. Pure. */
export function fencedRows(seen: readonly FencedSighting[], nowMs: number): FencedStatus[] {
  return seen
    .filter((s) => nowMs - s.lastAtMs <= FENCED_SPEAKER_WINDOW_MS)
    .map((s) => ({
      holder: s.holder,
      incarnation: s.incarnation,
      admitted: s.admitted,
      lastSeenAgeMs: Math.max(0, nowMs - s.lastAtMs),
      batches: s.batches,
    }))
    .sort((a, b) => a.holder.localeCompare(b.holder) || a.incarnation - b.incarnation);
}

/** The same bookkeeping kept in one place (for callers outside a machine). */
export class FencedSpeakers {
  private seen: readonly FencedSighting[] = [];

  /** Notes a refused receipt batch; anything but a `stale_incarnation` refusal is ignored. */
  note(err: unknown, atMs: number): void {
    this.seen = noteFencedSpeaker(this.seen, err, atMs);
  }

  /** The incarnations seen within FENCED_SPEAKER_WINDOW_MS of `nowMs`, by holder and incarnation. */
  rows(nowMs: number): FencedStatus[] {
    return fencedRows(this.seen, nowMs);
  }
}
