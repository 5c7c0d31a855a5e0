import { makeTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";

/** A valid unit of `payloadBytes` bytes covering `first..last` on volume `v`, lane `lane`. */
export function unit(first: number, last: number, payloadBytes = 64, lane = "l0", volume = "v", term = 1): TransportUnit {
  const n = last - first + 1;
  const payload = new Uint8Array(payloadBytes);
  for (let i = 0; i < payloadBytes; i++) payload[i] = (first * 31 + i) & 0xff;
  return makeTransportUnit({
    volume,
    lane,
    term,
    firstSeq: first,
    lastSeq: last,
    commitTs: Array.from({ length: n }, (_, i) => 1_700_000_000_000 + first + i),
    payload,
  });
}

export { CountingFileLayer, type IoCounts } from "../kit/counting-file-layer.ts";

export class ManualClock {
  private t = 1_000_000;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: (...args: unknown[]) => void }>();
  now(): number {
    return this.t;
  }
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(id: unknown): void {
    this.timers.delete(id as number);
  }
  get pending(): number {
    return this.timers.size;
  }
  advance(ms: number): void {
    this.t += ms;
    for (const [id, tm] of [...this.timers].sort((a, b) => a[1].at - b[1].at)) {
      if (tm.at <= this.t) {
        this.timers.delete(id);
        tm.fn();
      }
    }
  }
}

/** Resolves once `cond()` holds, yielding to the event loop between checks (I/O keeps running). */
export async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  if (!cond()) throw new Error("condition never held");
}
