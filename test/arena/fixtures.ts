import type { FileHandleLike, FileLayer } from "../../core/file-layer.ts";
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

/** Counts of I/O calls through a CountingFileLayer. */
export interface IoCounts {
  opens: number;
  writes: number;
  writtenBytes: number;
  datasyncs: number;
}

/**
 * Wraps a FileLayer and counts opens, writes and syncs, so a test can assert "zero disk writes".
 * `syncGate`, when set, makes every datasync wait for it (to simulate a slow disk).
 */
export class CountingFileLayer implements FileLayer {
  readonly counts: IoCounts = { opens: 0, writes: 0, writtenBytes: 0, datasyncs: 0 };
  syncGate: Promise<void> | undefined;

  constructor(private readonly inner: FileLayer) {}

  async open(path: string, opts?: { create?: boolean }): Promise<FileHandleLike> {
    this.counts.opens++;
    const h = await this.inner.open(path, opts);
    const self = this;
    return {
      path: h.path,
      read: (b, o, l, p) => h.read(b, o, l, p),
      async write(b, o, l, p) {
        self.counts.writes++;
        self.counts.writtenBytes += l;
        await h.write(b, o, l, p);
      },
      async datasync() {
        if (self.syncGate) await self.syncGate;
        await h.datasync();
        self.counts.datasyncs++;
      },
      sync: () => h.sync(),
      truncate: (l) => h.truncate(l),
      size: () => h.size(),
      close: () => h.close(),
    };
  }
  exists(p: string) {
    return this.inner.exists(p);
  }
  mkdirp(p: string) {
    return this.inner.mkdirp(p);
  }
  rename(a: string, b: string) {
    return this.inner.rename(a, b);
  }
  unlink(p: string) {
    return this.inner.unlink(p);
  }
  readdir(p: string) {
    return this.inner.readdir(p);
  }
  syncDir(p: string) {
    return this.inner.syncDir(p);
  }
}

/** A hand-driven Clock: timers fire only in `advance`. `pending` tells a test a timer is armed. */
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
