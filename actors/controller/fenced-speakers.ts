import { CustodyError } from "../../core/index.ts";
import type { FencedStatus } from "../../transport/protocol/index.ts";

/** How long a superseded incarnation stays listed after its last receipt (ms). */
export const FENCED_SPEAKER_WINDOW_MS = 60_000;

/** At most this many incarnations are tracked (the oldest sighting goes first). */
const MAX_TRACKED = 64;

/**
 * Superseded holder incarnations that still send receipts (issue #46). A receipt batch refused as
 * `stale_incarnation` names the holder, its incarnation and the one the control log admitted
 * since: a process that should have stopped (a fenced holder exits; one still speaking is stuck or
 * cannot read the log). The status document lists them (`fenced`), so an operator sees the old
 * process instead of a healthy-looking `custody ps` row. Pure bookkeeping, fed by the controller.
 */
export class FencedSpeakers {
  private readonly seen = new Map<
    string,
    { holder: string; incarnation: number; admitted: number; lastAtMs: number; batches: number }
  >();

  /** Notes a refused receipt batch; anything but a `stale_incarnation` refusal is ignored. */
  note(err: unknown, atMs: number): void {
    if (!(err instanceof CustodyError) || err.code !== "stale_incarnation") return;
    const { holderId, incarnation, current } = err.detail as {
      holderId?: unknown;
      incarnation?: unknown;
      current?: unknown;
    };
    if (typeof holderId !== "string" || typeof incarnation !== "number" || typeof current !== "number") return;
    const key = `${holderId}#${incarnation}`;
    const prev = this.seen.get(key);
    this.seen.delete(key);
    this.seen.set(key, {
      holder: holderId,
      incarnation,
      admitted: Math.max(current, prev?.admitted ?? 0),
      lastAtMs: atMs,
      batches: (prev?.batches ?? 0) + 1,
    });
    // Map order is insertion order: the first entry is the least recently seen.
    if (this.seen.size > MAX_TRACKED) this.seen.delete(this.seen.keys().next().value!);
  }

  /** The incarnations seen within FENCED_SPEAKER_WINDOW_MS of `nowMs`, by holder and incarnation. */
  rows(nowMs: number): FencedStatus[] {
    const out: FencedStatus[] = [];
    for (const [key, s] of this.seen) {
      if (nowMs - s.lastAtMs > FENCED_SPEAKER_WINDOW_MS) this.seen.delete(key);
      else
        out.push({
          holder: s.holder,
          incarnation: s.incarnation,
          admitted: s.admitted,
          lastSeenAgeMs: Math.max(0, nowMs - s.lastAtMs),
          batches: s.batches,
        });
    }
    return out.sort((a, b) => a.holder.localeCompare(b.holder) || a.incarnation - b.incarnation);
  }
}
