import { nodeFileLayer, type FileHandleLike, type FileLayer } from "../../core/index.ts";

/** Counts of I/O calls through a CountingFileLayer. */
export interface IoCounts {
  opens: number;
  writes: number;
  writtenBytes: number;
  datasyncs: number;
  readBytes: number;
}

/**
 * Wraps a FileLayer (the real one by default) and counts opens, writes and completed datasyncs, so
 * a test can assert "zero disk writes". A slow disk is simulated with `syncGate` (every datasync
 * waits for that promise) or `syncDelayMs` (every datasync waits that long first), a stalled one
 * with `writeGate`.
 */
export class CountingFileLayer implements FileLayer {
  readonly counts: IoCounts = { opens: 0, writes: 0, writtenBytes: 0, datasyncs: 0, readBytes: 0 };
  syncGate: Promise<void> | undefined;
  syncDelayMs = 0;
  /** Every write waits for this promise first (a disk that stalls mid-flush). */
  writeGate: Promise<void> | undefined;
  /** Writes that started (some may still wait at `writeGate`). */
  writesStarted = 0;

  constructor(private readonly inner: FileLayer = nodeFileLayer) {}

  get writes(): number {
    return this.counts.writes;
  }
  get writtenBytes(): number {
    return this.counts.writtenBytes;
  }
  get datasyncs(): number {
    return this.counts.datasyncs;
  }

  async open(path: string, opts?: { create?: boolean }): Promise<FileHandleLike> {
    this.counts.opens++;
    const h = await this.inner.open(path, opts);
    return {
      path: h.path,
      read: async (b, o, l, p) => {
        const r = await h.read(b, o, l, p);
        this.counts.readBytes += l;
        return r;
      },
      write: async (b, o, l, p) => {
        this.writesStarted++;
        if (this.writeGate) await this.writeGate;
        this.counts.writes++;
        this.counts.writtenBytes += l;
        await h.write(b, o, l, p);
      },
      datasync: async () => {
        if (this.syncGate) await this.syncGate;
        if (this.syncDelayMs > 0) await new Promise((r) => setTimeout(r, this.syncDelayMs));
        await h.datasync();
        this.counts.datasyncs++;
      },
      sync: () => h.sync(),
      truncate: (n) => h.truncate(n),
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
