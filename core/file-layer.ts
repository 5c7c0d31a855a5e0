import { open, mkdir, rename, unlink, stat, readdir } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * The file seam. Storage code (the SmartWAL volume, the arena's spill stream) does all file I/O
 * through this interface, so tests can swap in a layer that records every write and sync and
 * produces crash states (drop unsynced writes, reorder them, tear sectors). The contract is the
 * POSIX one: a write is durable only after a later `datasync()`/`sync()` on the same file has
 * completed; `syncDir()` makes creations and renames in a directory durable.
 */
export interface FileLayer {
  /**
   * Opens `path` for reading and writing; creates it when `create` is set, with permission bits
   * `mode` when given (default 0666 less the umask; a layer without permissions ignores it).
   */
  open(path: string, opts?: { create?: boolean; mode?: number }): Promise<FileHandleLike>;
  exists(path: string): Promise<boolean>;
  mkdirp(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  /** fsync of a directory, making entry creation/rename/unlink durable. */
  syncDir(path: string): Promise<void>;
}

/** One open file. Positions are absolute byte offsets (pread/pwrite semantics). */
export interface FileHandleLike {
  readonly path: string;
  /** Reads up to `length` bytes at `position` into `buf[offset..]`; returns bytes read (short at EOF). */
  read(buf: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /** Writes all of `buf[offset..offset+length)` at `position`. Not durable until a sync. */
  write(buf: Uint8Array, offset: number, length: number, position: number): Promise<void>;
  /** fdatasync(2). */
  datasync(): Promise<void>;
  /** fsync(2). */
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  size(): Promise<number>;
  close(): Promise<void>;
}

/** The real file layer over node:fs/promises. */
export const nodeFileLayer: FileLayer = {
  async open(path, opts) {
    let fh;
    try {
      fh = await open(path, "r+");
    } catch (err) {
      if (!opts?.create || (err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      fh = await open(path, "w+", opts.mode);
    }
    const handle = fh;
    return {
      path,
      async read(buf, offset, length, position) {
        const { bytesRead } = await handle.read(buf, offset, length, position);
        return bytesRead;
      },
      async write(buf, offset, length, position) {
        let done = 0;
        while (done < length) {
          const { bytesWritten } = await handle.write(buf, offset + done, length - done, position + done);
          done += bytesWritten;
        }
      },
      datasync: () => handle.datasync(),
      sync: () => handle.sync(),
      truncate: (length) => handle.truncate(length),
      async size() {
        return (await handle.stat()).size;
      },
      close: () => handle.close(),
    };
  },
  async exists(path) {
    try {
      await stat(path);
      return true;
    } catch {
      return false;
    }
  },
  async mkdirp(path) {
    await mkdir(path, { recursive: true });
  },
  async rename(from, to) {
    await rename(from, to);
  },
  async unlink(path) {
    await unlink(path);
  },
  async readdir(path) {
    return readdir(path);
  },
  async syncDir(path) {
    const dir = await open(path, "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  },
};

/** Directory that holds `path`, for syncDir after creating or renaming it. */
export const parentDir = dirname;
