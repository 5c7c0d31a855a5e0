import type { FileHandleLike, FileLayer } from "./file-layer.ts";

/**
 * A fault-injecting, in-memory FileLayer. It behaves like the real layer while nothing crashes
 * (same read/write/truncate/size semantics, checked by one conformance suite), and it keeps a log
 * of every mutating operation so a test can later ask "what could the disk hold if power failed
 * right after operation k?" and reopen a fresh layer over that answer.
 *
 * Durability model (POSIX, pessimistic):
 * - a file's writes and truncates are durable only after a later `datasync()`/`sync()` of that file;
 * - creations, renames and unlinks are durable only after `syncDir()` of the parent directory;
 * - at a crash, any subset of the not-yet-durable writes may have reached the disk (in any order),
 *   and a write may be torn at 512-byte sector granularity (each sector lands or not).
 */
export class CrashFileLayer implements FileLayer {
  /** Sector size used when tearing writes. */
  static readonly SECTOR = 512;

  private readonly log: LoggedOp[] = [];
  private readonly live: Namespace;
  private nextInode: number;
  private readonly brokenSync: (path: string) => boolean;

  /**
   * Creates an empty layer, or one whose disk holds `initial` (path → bytes, all durable).
   * `brokenSync(path)` makes datasync/sync of matching files a silent no-op: a lying disk, used to
   * prove that recovery detects an ineffective barrier instead of returning wrong data.
   */
  constructor(initial?: Map<string, Uint8Array>, opts: { brokenSync?: (path: string) => boolean } = {}) {
    this.brokenSync = opts.brokenSync ?? (() => false);
    this.live = new Namespace();
    this.nextInode = 1;
    for (const [path, bytes] of initial ?? []) this.#init(path, bytes.slice());
  }

  /** Adds a durable file whose bytes this layer now owns: the log keeps them, the live view gets a copy. */
  #init(path: string, owned: Uint8Array): void {
    const ino = this.nextInode++;
    this.live.entries.set(path, ino);
    this.live.inodes.set(ino, owned.slice());
    this.log.push({ kind: "init", path, ino, data: owned });
  }

  /** Number of operations logged so far; a crash point is any value in 0..opCount(). */
  opCount(): number {
    return this.log.length;
  }

  /** The kinds of the logged operations (for choosing interesting crash points). */
  opKinds(): readonly string[] {
    return this.log.map((op) => op.kind);
  }

  /**
   * Writes that are not durable right after operation `at` (a crash point), in issue order, with
   * ids usable in a CrashSpec. Throws RangeError when `at` is outside 0..opCount().
   */
  pendingWritesAt(at: number): PendingWrite[] {
    return replay(this.log, this.checkPoint(at)).pending.map(({ id, path, position, data }) => ({
      id,
      path,
      position,
      length: data.length,
    }));
  }

  /**
   * A new layer whose disk is one possible outcome of a power cut right after operation `at`:
   * durable state plus the unsynced writes the spec keeps (default: none), each possibly torn.
   * The returned layer has no pending writes and an empty log; this layer is unchanged.
   */
  crashAt(at: number, spec: CrashSpec = {}): CrashFileLayer {
    const state = replay(this.log, this.checkPoint(at));
    const keep = spec.keep ?? "none";
    // The replay's durable buffers are its own (nothing else refers to them): no copy needed.
    const disk = new Map<number, Uint8Array>(state.durable);
    for (const w of state.pending) {
      const kept = keep === "all" || (keep !== "none" && keep(w.id));
      if (!kept) continue;
      const sectors = spec.tear?.get(w.id);
      const base = disk.get(w.ino) ?? new Uint8Array(0);
      disk.set(w.ino, applyWrite(base, w.position, w.data, sectors));
    }
    const layer = new CrashFileLayer();
    // The log never changes an init op's bytes, so two names of one inode may share them.
    for (const [path, ino] of state.durableNames) layer.#init(path, disk.get(ino) ?? new Uint8Array(0));
    return layer;
  }

  /** Every file of the current (live, not crashed) view: path → a copy of its bytes. */
  snapshotFiles(): Map<string, Uint8Array> {
    const out = new Map<string, Uint8Array>();
    for (const [path, ino] of this.live.entries)
      out.set(path, (this.live.inodes.get(ino) ?? new Uint8Array(0)).slice());
    return out;
  }

  private checkPoint(at: number): number {
    if (!Number.isInteger(at) || at < 0 || at > this.log.length)
      throw new RangeError(`crash point ${at} outside 0..${this.log.length}`);
    return at;
  }

  async open(path: string, opts?: { create?: boolean }): Promise<FileHandleLike> {
    let ino = this.live.entries.get(path);
    if (ino === undefined) {
      if (!opts?.create) throw enoent("open", path);
      ino = this.nextInode++;
      this.live.entries.set(path, ino);
      this.live.inodes.set(ino, new Uint8Array(0));
      this.log.push({ kind: "create", path, ino });
    }
    return new CrashHandle(this, path, ino);
  }

  async exists(path: string): Promise<boolean> {
    return this.live.entries.has(path) || [...this.live.entries.keys()].some((p) => p.startsWith(path + "/"));
  }

  async mkdirp(_path: string): Promise<void> {
    // Directories are implicit (a path prefix); nothing to record.
  }

  async rename(from: string, to: string): Promise<void> {
    const ino = this.live.entries.get(from);
    if (ino === undefined) throw enoent("rename", from);
    this.live.entries.delete(from);
    this.live.entries.set(to, ino);
    this.log.push({ kind: "rename", path: from, to });
  }

  async unlink(path: string): Promise<void> {
    if (!this.live.entries.delete(path)) throw enoent("unlink", path);
    this.log.push({ kind: "unlink", path });
  }

  async readdir(path: string): Promise<string[]> {
    const prefix = path.endsWith("/") ? path : path + "/";
    const names = new Set<string>();
    for (const p of this.live.entries.keys()) {
      if (!p.startsWith(prefix)) continue;
      names.add(p.slice(prefix.length).split("/")[0]!);
    }
    return [...names].sort();
  }

  async syncDir(path: string): Promise<void> {
    this.log.push({ kind: "syncdir", path });
  }

  /** @internal used by CrashHandle */
  bytes(ino: number): Uint8Array {
    return this.live.inodes.get(ino) ?? new Uint8Array(0);
  }

  /** @internal used by CrashHandle */
  mutate(ino: number, op: LoggedOp, next: Uint8Array): void {
    this.live.inodes.set(ino, next);
    this.log.push(op);
  }

  /** @internal used by CrashHandle */
  syncFile(ino: number, path: string): void {
    if (this.brokenSync(path)) return;
    this.log.push({ kind: "sync", ino, path });
  }
}

/** Which unsynced writes survive a simulated crash, and how torn ones are cut. */
export interface CrashSpec {
  /** "none" (default) drops every unsynced write; "all" keeps them; a predicate keeps chosen ids. */
  keep?: "none" | "all" | ((writeId: number) => boolean);
  /** writeId → indexes of the 512-byte sectors (relative to the write's first sector) that land. */
  tear?: Map<number, number[]>;
}

/** An unsynced write at some crash point. */
export interface PendingWrite {
  id: number;
  path: string;
  position: number;
  length: number;
}

type LoggedOp =
  | { kind: "init"; path: string; ino: number; data: Uint8Array }
  | { kind: "create"; path: string; ino: number }
  | { kind: "write"; ino: number; path: string; position: number; data: Uint8Array }
  | { kind: "truncate"; ino: number; path: string; length: number }
  | { kind: "sync"; ino: number; path: string }
  | { kind: "rename"; path: string; to: string }
  | { kind: "unlink"; path: string }
  | { kind: "syncdir"; path: string };

class Namespace {
  readonly entries = new Map<string, number>();
  readonly inodes = new Map<number, Uint8Array>();
}

interface ReplayState {
  durable: Map<number, Uint8Array>;
  durableNames: Map<string, number>;
  pending: { id: number; ino: number; path: string; position: number; data: Uint8Array }[];
}

/**
 * Replays the first `upTo` logged ops, tracking what is durable and what is still in flight.
 * Live files are updated in place (growable views), and each inode keeps an undo record of what
 * its unsynced ops overwrote; the durable content is the live content with those undone. A
 * replay then costs what the ops wrote, not a whole-file copy per op (crash points in long
 * simulated runs replayed spill logs of thousands of writes).
 */
function replay(log: readonly LoggedOp[], upTo: number): ReplayState {
  const live = new Map<number, Uint8Array>();
  const hasDurable = new Set<number>();
  const liveNames = new Map<string, number>();
  const durableNames = new Map<string, number>();
  // Unsynced ops per inode, in order; truncates are kept so a sync can replay them faithfully.
  const unsynced = new Map<number, UnsyncedOp[]>();
  // What the unsynced ops overwrote, per inode, in order: restore the length, then the old bytes at `position`.
  const undo = new Map<number, UndoRecord[]>();
  const bytes = (ino: number) => live.get(ino) ?? new Uint8Array(0);
  for (let i = 0; i < upTo; i++) {
    const op = log[i]!;
    switch (op.kind) {
      case "init":
        live.set(op.ino, op.data.slice());
        hasDurable.add(op.ino);
        liveNames.set(op.path, op.ino);
        durableNames.set(op.path, op.ino);
        break;
      case "create":
        live.set(op.ino, new Uint8Array(0));
        hasDurable.add(op.ino);
        liveNames.set(op.path, op.ino);
        break;
      case "write": {
        const cur = bytes(op.ino);
        const end = op.position + op.data.length;
        listOf(undo, op.ino).push({
          oldLength: cur.length,
          position: op.position,
          old: cur.slice(op.position, Math.min(end, cur.length)),
        });
        const next = end <= cur.length ? cur : resizeLive(cur, end);
        next.set(op.data, op.position);
        live.set(op.ino, next);
        listOf(unsynced, op.ino).push({ id: i, kind: "write", position: op.position, data: op.data, path: op.path });
        break;
      }
      case "truncate": {
        const cur = bytes(op.ino);
        listOf(undo, op.ino).push({ oldLength: cur.length, position: op.length, old: cur.slice(op.length) });
        live.set(op.ino, resizeLive(cur, op.length));
        listOf(unsynced, op.ino).push({ kind: "truncate", length: op.length });
        break;
      }
      case "sync":
        hasDurable.add(op.ino);
        undo.delete(op.ino);
        unsynced.delete(op.ino);
        break;
      case "rename": {
        const ino = liveNames.get(op.path);
        liveNames.delete(op.path);
        if (ino !== undefined) liveNames.set(op.to, ino);
        break;
      }
      case "unlink":
        liveNames.delete(op.path);
        break;
      case "syncdir":
        syncDir(op.path, liveNames, durableNames);
        break;
    }
  }
  const durable = new Map<number, Uint8Array>();
  for (const ino of hasDurable) durable.set(ino, undone(bytes(ino), undo.get(ino) ?? []));
  return { durable, durableNames, pending: pendingWrites(unsynced) };
}

/** An op on an inode since its last sync. */
type UnsyncedOp =
  | { id: number; kind: "write"; position: number; data: Uint8Array; path: string }
  | { kind: "truncate"; length: number };

/** What one unsynced op overwrote: the length before it, and the old bytes at `position`. */
type UndoRecord = { oldLength: number; position: number; old: Uint8Array };

/** A directory sync: the names directly in `path` become durable as they are live (removed ones go). */
function syncDir(path: string, liveNames: Map<string, number>, durableNames: Map<string, number>): void {
  const prefix = path.endsWith("/") ? path : path + "/";
  const inDir = (p: string) => p.startsWith(prefix) && !p.slice(prefix.length).includes("/");
  for (const p of [...durableNames.keys()]) if (inDir(p) && !liveNames.has(p)) durableNames.delete(p);
  for (const [p, ino] of liveNames) if (inDir(p)) durableNames.set(p, ino);
}

/** The durable content of a file: a copy of its live bytes with its unsynced ops undone, newest first. */
function undone(live: Uint8Array, undo: UndoRecord[]): Uint8Array {
  let d = resize(live, live.length);
  for (const u of undo.reverse()) {
    if (d.length !== u.oldLength) d = resize(d, u.oldLength);
    // A write that started past the old end overwrote nothing (and its position is out of range).
    if (u.old.length > 0) d.set(u.old, u.position);
  }
  return d;
}

/**
 * The unsynced writes in log order. An unsynced truncate is lost at a crash (sizes change durably
 * only at sync); kept writes still extend the file as far as they reach.
 */
function pendingWrites(unsynced: Map<number, UnsyncedOp[]>): ReplayState["pending"] {
  const pending: ReplayState["pending"] = [];
  for (const [ino, ops] of unsynced) {
    for (const op of ops)
      if (op.kind === "write") pending.push({ id: op.id, ino, path: op.path, position: op.position, data: op.data });
  }
  pending.sort((a, b) => a.id - b.id);
  return pending;
}

function listOf<K, V>(m: Map<K, V[]>, k: K): V[] {
  let l = m.get(k);
  if (!l) m.set(k, (l = []));
  return l;
}

/** `base` with `data` written at `position` (growing with zeros); `sectors` keeps only those sectors. */
function applyWrite(base: Uint8Array, position: number, data: Uint8Array, sectors?: number[]): Uint8Array {
  const end = position + data.length;
  const out = end > base.length ? resize(base, end) : base.slice();
  if (!sectors) {
    out.set(data, position);
    return out;
  }
  const S = CrashFileLayer.SECTOR;
  const first = Math.floor(position / S);
  for (const s of sectors) {
    const lo = Math.max(position, (first + s) * S);
    const hi = Math.min(end, (first + s + 1) * S);
    if (lo < hi) out.set(data.subarray(lo - position, hi - position), lo);
  }
  return out;
}

function resize(buf: Uint8Array, length: number): Uint8Array {
  const out = new Uint8Array(length);
  out.set(buf.subarray(0, Math.min(length, buf.length)));
  return out;
}

/**
 * Resizes a live file view. Views sit on a buffer with spare capacity (doubling), so appends cost
 * amortized O(bytes appended) rather than a whole-file copy each; bytes cut off by a shrink are
 * zeroed so that a later extension reads zeros, as POSIX requires.
 */
function resizeLive(buf: Uint8Array, length: number): Uint8Array {
  const capacity = buf.buffer.byteLength - buf.byteOffset;
  if (buf.byteOffset === 0 && length <= capacity) {
    if (length < buf.length) buf.fill(0, length);
    return new Uint8Array(buf.buffer, 0, length);
  }
  const out = new Uint8Array(new ArrayBuffer(Math.max(length, 2 * buf.length, 4096)), 0, length);
  out.set(buf.subarray(0, Math.min(length, buf.length)));
  return out;
}

function enoent(syscall: string, path: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`ENOENT: no such file or directory, ${syscall} '${path}'`);
  err.code = "ENOENT";
  err.syscall = syscall;
  err.path = path;
  return err;
}

class CrashHandle implements FileHandleLike {
  private closed = false;
  constructor(
    private readonly layer: CrashFileLayer,
    readonly path: string,
    private readonly ino: number,
  ) {}

  private check(): void {
    if (this.closed) throw Object.assign(new Error(`EBADF: file closed '${this.path}'`), { code: "EBADF" });
  }

  async read(buf: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    this.check();
    const bytes = this.layer.bytes(this.ino);
    const n = Math.max(0, Math.min(length, bytes.length - position));
    if (n > 0) buf.set(bytes.subarray(position, position + n), offset);
    return n;
  }

  async write(buf: Uint8Array, offset: number, length: number, position: number): Promise<void> {
    this.check();
    const data = buf.slice(offset, offset + length);
    // The live view is private to this layer (reads copy out, the log keeps its own copy), so a
    // write inside the file updates it in place instead of copying the whole file per write.
    const live = this.layer.bytes(this.ino);
    const next = position + length <= live.length ? live : resizeLive(live, position + length);
    next.set(data, position);
    this.layer.mutate(this.ino, { kind: "write", ino: this.ino, path: this.path, position, data }, next);
  }

  async datasync(): Promise<void> {
    this.check();
    this.layer.syncFile(this.ino, this.path);
  }

  async sync(): Promise<void> {
    this.check();
    this.layer.syncFile(this.ino, this.path);
  }

  async truncate(length: number): Promise<void> {
    this.check();
    this.layer.mutate(
      this.ino,
      { kind: "truncate", ino: this.ino, path: this.path, length },
      resizeLive(this.layer.bytes(this.ino), length),
    );
  }

  async size(): Promise<number> {
    this.check();
    return this.layer.bytes(this.ino).length;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
