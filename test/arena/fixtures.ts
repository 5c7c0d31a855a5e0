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
