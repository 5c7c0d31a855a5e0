import { crc32 } from "node:zlib";
import { systemClock, type Clock } from "../core/clock.ts";
import { Counters } from "../core/counters.ts";
import { isCustodyError } from "../core/custody-error.ts";
import { nodeFileLayer, type FileLayer } from "../core/file-layer.ts";
import { Allocator, Hold, type PhysicalRun } from "./allocator.ts";
import { coalesceWrites, planCommit } from "./commit-plan.ts";
import { BlockMap, UNMAPPED } from "./block-map.ts";
import { CheckpointCorruptError, BadRequestError, DamagedBlockError, NoSpaceError, VolumeClosedError, WalDamagedError } from "./volume-errors.ts";
import { loadCheckpoint, writeCheckpoint } from "./checkpoint.ts";
import { DirtyMap } from "./dirty-map.ts";
import { BLOCK_SIZE, VolumeMode, type VolumeGeometry } from "./format.ts";
import { GroupCommit } from "./group-commit.ts";
import { classifyLsn, RecoverabilityClass, type DurabilityProof } from "./recoverability.ts";
import { recover, type RecoveryReport } from "./recovery.ts";
import { createVolumeFiles, openVolumeFiles, type CreateVolumeOptions, type VolumeHandles } from "./volume-files.ts";
import { RecordFlag, type WalRecord } from "./wal-record.ts";
import { WalRing } from "./wal-ring.ts";

/** Runtime options of an open volume. */
export interface OpenVolumeOptions {
  fileLayer?: FileLayer;
  clock?: Clock;
  counters?: Counters;
  /** Group commit: most operations per batch (default 64). */
  maxBatch?: number;
  /** Group commit: how long a lone write waits for company (default 0 ms). */
  maxDelayMs?: number;
  /** Re-verify every checkpoint-named block against its CRC at mount (default false). */
  scrub?: boolean;
  /** Mount even when recovery finds unreadable records inside the log, dropping them (default false: WalDamagedError). */
  acceptLoss?: boolean;
}

/** One record of the WAL window, read back from the ring (what a replica's WAL catch-up replays). */
export interface WalEntry {
  lsn: number;
  flag: RecordFlag;
  lba: number;
  blockCount: number;
}

/** I/O and accounting figures since open. */
export interface VolumeStats {
  writes: number;
  trims: number;
  blocksWritten: number;
  extentSyncs: number;
  walSyncs: number;
  walBytes: number;
  checkpoints: number;
  flushes: number;
  batches: number;
  freeBlocks: number;
}

/** One block of a checkpoint-consistent read: its data, or null when the LBA is unmapped (reads as zeros). */
export interface SnapshotBlock {
  lba: number;
  data: Uint8Array | null;
}

type Op =
  | { kind: "write"; lba: number; data: Uint8Array; resolve: (lsn: number) => void; reject: (e: unknown) => void }
  | { kind: "trim"; lba: number; count: number; resolve: (lsn: number) => void; reject: (e: unknown) => void }
  | { kind: "sync" | "checkpoint"; resolve: (lsn: number) => void; reject: (e: unknown) => void }
  | { kind: "exclusive"; run: () => Promise<number>; resolve: (lsn: number) => void; reject: (e: unknown) => void };
type MutOp = Extract<Op, { kind: "write" | "trim" }>;

/**
 * A single-node block volume in SmartWAL mode (data to a free extent block, one fdatasync barrier
 * per group, then 64-byte WAL records) or inline mode (full payload in the WAL, flushed to the
 * extent later), with group commit, copy-on-write allocation, checkpoints and crash recovery.
 * A write resolves with its LSN once admitted; `syncCache()` makes every admitted write durable
 * and returns the durable LSN. Reads return admitted data (G2) or throw DamagedBlockError.
 * All I/O goes through the FileLayer seam; time through the Clock seam.
 */
export class SmartWalVolume {
  private readonly map: BlockMap;
  private readonly alloc: Allocator | undefined;
  private readonly ring: WalRing;
  private readonly queue: GroupCommit<Op>;
  private readonly counters: Counters;
  /** Inline mode: admitted payloads not yet copied to the extent. */
  private readonly unflushed = new Map<number, Uint8Array>();
  private readonly peers = new Map<string, DirtyMap>();
  private checkpointMap: BlockMap;
  private checkpointSeq: number;
  private checkpointSlot: number;
  private durableLsn: number;
  private failure: unknown;
  private closed = false;
  private snapshotReads: Promise<unknown> = Promise.resolve();
  private readonly spare: number;
  private readonly st = { writes: 0, trims: 0, blocksWritten: 0, extentSyncs: 0, walSyncs: 0, checkpoints: 0, flushes: 0, batches: 0 };

  private constructor(
    readonly dir: string,
    readonly geometry: VolumeGeometry,
    private readonly files: VolumeHandles,
    state: { map: BlockMap; lastLsn: number; checkpointMap: BlockMap; checkpointLsn: number; checkpointSeq: number; checkpointSlot: number },
    /** What mount-time recovery found. */
    readonly recovery: RecoveryReport,
    opts: OpenVolumeOptions,
  ) {
    this.map = state.map;
    this.checkpointMap = state.checkpointMap;
    this.checkpointSeq = state.checkpointSeq;
    this.checkpointSlot = state.checkpointSlot;
    this.durableLsn = state.lastLsn;
    this.counters = opts.counters ?? new Counters();
    this.spare = geometry.physicalBlocks - geometry.blockCount;
    this.ring = new WalRing(files.wal, geometry.walCapacity, geometry.walSlotSize, state.lastLsn, state.checkpointLsn);
    if (geometry.mode === VolumeMode.SmartWal) {
      const a = new Allocator(geometry.physicalBlocks);
      for (let l = 0; l < geometry.blockCount; l++) {
        const p = this.map.phys[l]!;
        if (p !== UNMAPPED) a.hold(p, Hold.Live);
        const c = this.checkpointMap.phys[l]!;
        if (c !== UNMAPPED) a.hold(c, Hold.Checkpoint);
      }
      this.alloc = a;
    }
    this.queue = new GroupCommit<Op>(
      { maxBatch: opts.maxBatch ?? 64, maxDelayMs: opts.maxDelayMs ?? 0, clock: opts.clock ?? systemClock },
      (batch) => this.runBatch(batch),
      (err, batch) => this.fail(err, batch),
    );
  }

  /** Creates a new volume at `dir` (see createVolumeFiles); does not open it. */
  static async create(dir: string, opts: CreateVolumeOptions, fileLayer: FileLayer = nodeFileLayer): Promise<VolumeGeometry> {
    return createVolumeFiles(fileLayer, dir, opts);
  }

  /**
   * Mounts the volume at `dir`: validates header and file sizes, picks the newest valid checkpoint,
   * replays and verifies the WAL, rebuilds the allocator (I4). When recovery found damage (or a
   * loss was accepted) it writes a checkpoint at once, so the damaged flags outlive this mount and
   * the unreadable records leave the replay window. Throws VolumeNotFoundError, HeaderCorruptError,
   * FileSizeError, CheckpointCorruptError (no valid checkpoint slot) or WalDamagedError (records of
   * the log unreadable and `acceptLoss` not set; nothing was written).
   */
  static async open(dir: string, opts: OpenVolumeOptions = {}): Promise<SmartWalVolume> {
    const fl = opts.fileLayer ?? nodeFileLayer;
    const { geometry: g, handles } = await openVolumeFiles(fl, dir);
    try {
      const loaded = await loadCheckpoint(handles.checkpoints, g.blockCount, g.physicalBlocks, g.walCapacity);
      if (!loaded.chosen) throw new CheckpointCorruptError("no valid checkpoint slot", { issues: loaded.issues });
      const ckpt = loaded.chosen;
      const checkpointMap = ckpt.map.clone();
      const rec = await recover(g, ckpt, loaded.slot, loaded.issues, handles, { scrub: opts.scrub ?? false, acceptLoss: opts.acceptLoss ?? false });
      const vol = new SmartWalVolume(
        dir,
        g,
        handles,
        { map: rec.map, lastLsn: rec.lastLsn, checkpointMap, checkpointLsn: ckpt.lsn, checkpointSeq: ckpt.sequence, checkpointSlot: loaded.slot },
        rec.report,
        opts,
      );
      if (rec.report.damaged.length > 0 || rec.report.lossAccepted) await vol.checkpoint();
      return vol;
    } catch (err) {
      await closeAll(handles);
      throw err;
    }
  }

  /**
   * Writes whole blocks at `lba` (data length a positive multiple of 4096). Resolves with the LSN
   * of the write's last record once admitted (not yet durable: call syncCache()). Rejects with
   * BadRequestError on a bad range or size (counted, nothing changes).
   */
  write(lba: number, data: Uint8Array): Promise<number> {
    return this.enqueue((resolve, reject) => {
      const blocks = data instanceof Uint8Array && data.length > 0 && data.length % BLOCK_SIZE === 0 ? data.length / BLOCK_SIZE : 0;
      if (blocks === 0) throw new BadRequestError(`data must be a positive multiple of ${BLOCK_SIZE} bytes`, { length: (data as Uint8Array)?.length });
      this.checkRange(lba, blocks);
      const limit = this.geometry.mode === VolumeMode.SmartWal ? this.spare : Math.floor(this.geometry.walCapacity / 2);
      if (blocks > limit) throw new BadRequestError(`a single write may span at most ${limit} blocks`, { blocks, limit });
      return { kind: "write", lba, data: data.slice(), resolve, reject };
    });
  }

  /** Unmaps `count` blocks at `lba` (they read back as zeros). Resolves with the trim's LSN once admitted. */
  trim(lba: number, count = 1): Promise<number> {
    return this.enqueue((resolve, reject) => {
      this.checkRange(lba, count);
      return { kind: "trim", lba, count, resolve, reject };
    });
  }

  /** fsyncs the WAL after every write admitted before this call; resolves with the durable LSN (the proof). */
  syncCache(): Promise<number> {
    return this.enqueue((resolve, reject) => ({ kind: "sync", resolve, reject }));
  }

  /** Syncs and writes a checkpoint (inline mode: flushes first); resolves with the checkpoint LSN. */
  checkpoint(): Promise<number> {
    return this.enqueue((resolve, reject) => ({ kind: "checkpoint", resolve, reject }));
  }

  /**
   * Reads `count` blocks at `lba`: admitted data, zeros for unmapped blocks. Throws BadRequestError
   * on a bad range and DamagedBlockError when a block is damaged or fails its CRC on read.
   */
  async read(lba: number, count = 1): Promise<Uint8Array> {
    this.assertOpen();
    try {
      this.checkRange(lba, count);
    } catch (err) {
      this.count(err);
      throw err;
    }
    const out = new Uint8Array(count * BLOCK_SIZE);
    await Promise.all(Array.from({ length: count }, (_, k) => this.readBlock(lba + k, out.subarray(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE))));
    return out;
  }

  /** LBAs currently known damaged (from recovery or a failed read CRC). */
  damagedLbas(): number[] {
    return this.map.damagedLbas();
  }

  /** The WAL window: first LSN still held (checkpoint LSN + 1), newest LSN, durable LSN. */
  walWindow(): { start: number; head: number; durable: number; checkpointLsn: number } {
    return { start: this.ring.checkpointLsn + 1, head: this.ring.head, durable: this.durableLsn, checkpointLsn: this.ring.checkpointLsn };
  }

  /** What the last completed syncCache proves (memo section 9). */
  durabilityProof(): DurabilityProof {
    const inline = this.geometry.mode === VolumeMode.Inline;
    return {
      durableLsn: this.durableLsn,
      epoch: this.geometry.epoch,
      checkpointLsn: this.ring.checkpointLsn,
      recoverability: inline ? RecoverabilityClass.Inline : RecoverabilityClass.ExtentReferenced,
      barriers: inline ? ["wal_fsync"] : ["extent_fdatasync", "wal_fsync"],
    };
  }

  /** Recoverability class of the write with `lsn`. */
  recoverabilityOf(lsn: number): RecoverabilityClass {
    return classifyLsn(lsn, this.ring.checkpointLsn, this.geometry.mode === VolumeMode.Inline);
  }

  /**
   * The records after `lsn` still in the WAL window, read back from the ring file (they survive a
   * restart; only a checkpoint moves the window). Runs between group commits, so no append or wrap
   * races it. Throws BadRequestError when `lsn` + 1 is before the window start (the caller must use
   * a delta instead) and WalDamagedError when a record in the window is unreadable.
   */
  async walRecordsAfter(lsn: number): Promise<WalEntry[]> {
    let out: WalEntry[] = [];
    await this.enqueue((resolve, reject) => ({
      kind: "exclusive",
      resolve,
      reject,
      run: async () => {
        const start = this.ring.checkpointLsn + 1;
        if (!Number.isSafeInteger(lsn) || lsn < 0 || lsn + 1 < start) {
          throw new BadRequestError(`LSN ${lsn} is before the WAL window starting at ${start}`, { lsn, walStart: start });
        }
        const { records, unreadable } = await this.ring.readRecords(lsn + 1, this.ring.head);
        if (unreadable.length > 0) throw new WalDamagedError(`WAL records ${unreadable.join(",")} are unreadable`, unreadable);
        out = records.map((r) => ({ lsn: r.lsn, flag: r.flag, lba: r.lba, blockCount: r.blockCount }));
        return this.ring.head;
      },
    }));
    return out;
  }

  /**
   * Extent delta for a peer that holds everything through `lsn`: checkpoints (freezing a
   * consistent snapshot), then reads every LBA whose latest change in that snapshot is after `lsn`.
   * Per-LBA change LSNs are kept in the checkpoint, so this is exact after a restart too.
   */
  async readDeltaSince(lsn: number): Promise<{ checkpointLsn: number; blocks: SnapshotBlock[] }> {
    this.assertOpen();
    if (!this.alloc) throw new BadRequestError("checkpoint-consistent reads need SmartWAL mode");
    await this.checkpoint();
    // The LBAs are chosen from the snapshot actually read, even if another checkpoint came between.
    return this.readSnapshot((snap) => {
      const lbas: number[] = [];
      for (let l = 0; l < snap.blockCount; l++) if (snap.lsn[l]! > lsn) lbas.push(l);
      return lbas;
    });
  }

  /** Starts (or returns) the dirty map of `peer`, tracking every change after the current head. */
  trackPeer(peer: string): DirtyMap {
    let d = this.peers.get(peer);
    if (!d) this.peers.set(peer, (d = new DirtyMap(this.geometry.blockCount, this.ring.head)));
    return d;
  }

  /**
   * Reads `lbas` as of the latest checkpoint (SmartWAL only): the blocks that checkpoint names stay
   * allocated while this runs, so concurrent writes cannot change what is read (G4). Throws
   * BadRequestError in inline mode (its extent is updated in place) or on a bad LBA, and
   * DamagedBlockError when a snapshot block fails its CRC.
   */
  async readCheckpointConsistent(lbas: readonly number[]): Promise<{ checkpointLsn: number; blocks: SnapshotBlock[] }> {
    this.assertOpen();
    if (!this.alloc) throw new BadRequestError("checkpoint-consistent reads need SmartWAL mode");
    for (const l of lbas) this.checkRange(l, 1);
    return this.readSnapshot(() => lbas);
  }

  private readSnapshot(select: (snap: BlockMap) => readonly number[]): Promise<{ checkpointLsn: number; blocks: SnapshotBlock[] }> {
    const run = async () => {
      const alloc = this.alloc!;
      const snap = this.checkpointMap;
      const lsn = this.ring.checkpointLsn;
      const lbas = select(snap);
      const held = lbas.map((l) => snap.phys[l]!).filter((p) => p !== UNMAPPED);
      for (const p of held) alloc.hold(p, Hold.Reader);
      try {
        const blocks: SnapshotBlock[] = [];
        for (const lba of lbas) {
          const p = snap.phys[lba]!;
          if (p === UNMAPPED) {
            blocks.push({ lba, data: null });
            continue;
          }
          const data = new Uint8Array(BLOCK_SIZE);
          await this.files.extent.read(data, 0, BLOCK_SIZE, p * BLOCK_SIZE);
          if (snap.damaged[lba] || (crc32(data) >>> 0) !== snap.crc[lba]) throw new DamagedBlockError(lba, { checkpointLsn: lsn });
          blocks.push({ lba, data });
        }
        return { checkpointLsn: lsn, blocks };
      } finally {
        for (const p of held) alloc.release(p, Hold.Reader);
      }
    };
    // One snapshot reader at a time keeps the Reader hold a simple flag.
    const p = this.snapshotReads.then(run, run);
    this.snapshotReads = p.catch(() => undefined);
    return p;
  }

  /**
   * Delta transfer for `peer`: checkpoints (freezing a consistent snapshot), then reads every LBA
   * the peer's dirty map marks at or below the checkpoint LSN. After the peer applies and syncs
   * them, call `trackPeer(peer).confirm(checkpointLsn)`.
   */
  async readDelta(peer: string): Promise<{ checkpointLsn: number; blocks: SnapshotBlock[] }> {
    const dirty = this.trackPeer(peer);
    const lsn = await this.checkpoint();
    return this.readCheckpointConsistent(dirty.dirtyLbas(lsn));
  }

  /** Counters of rejected inputs by error code. */
  rejected(): Record<string, number> {
    return this.counters.snapshot();
  }

  /** I/O figures since open. */
  stats(): VolumeStats {
    return { ...this.st, walBytes: this.ring.bytesWritten, freeBlocks: this.alloc?.freeCount() ?? 0 };
  }

  /** Waits for queued operations, then closes the files. Does not sync: call syncCache() first for durability. */
  async close(): Promise<void> {
    if (this.closed) return;
    while (this.queue.busy) await new Promise((r) => setImmediate(r));
    this.closed = true;
    await this.snapshotReads;
    await closeAll(this.files);
  }

  // ---- internals -------------------------------------------------------------------------------

  private enqueue(make: (resolve: (lsn: number) => void, reject: (e: unknown) => void) => Op): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      try {
        this.assertOpen();
        this.queue.submit(make(resolve, reject));
      } catch (err) {
        this.count(err);
        reject(err);
      }
    });
  }

  private count(err: unknown): void {
    if (isCustodyError(err)) this.counters.inc(err.code);
  }

  private assertOpen(): void {
    if (this.closed) throw new VolumeClosedError();
    if (this.failure !== undefined) throw new VolumeClosedError("volume failed after an I/O error and is fenced", { cause: String(this.failure) });
  }

  private checkRange(lba: number, count: number): void {
    if (!Number.isInteger(lba) || !Number.isInteger(count) || lba < 0 || count < 1 || lba + count > this.geometry.blockCount) {
      throw new BadRequestError(`range ${lba}+${count} is outside the volume (0..${this.geometry.blockCount - 1})`, { lba, count });
    }
  }

  private fail(err: unknown, batch: Op[]): void {
    // State may be half-applied after an I/O error: fence the volume rather than guess.
    this.failure = err;
    for (const op of batch) op.reject(err);
  }

  private async readBlock(lba: number, into: Uint8Array): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (this.map.damaged[lba]) {
        this.counters.inc("VOLUME_BLOCK_DAMAGED");
        throw new DamagedBlockError(lba, { lsn: this.map.lsn[lba] });
      }
      const pending = this.unflushed.get(lba);
      if (pending) {
        into.set(pending);
        return;
      }
      const p = this.map.phys[lba]!;
      if (p === UNMAPPED) {
        into.fill(0);
        return;
      }
      const lsn = this.map.lsn[lba]!;
      into.fill(0);
      await this.files.extent.read(into, 0, BLOCK_SIZE, p * BLOCK_SIZE);
      if ((crc32(into) >>> 0) === this.map.crc[lba]) return;
      // A write may have moved the LBA while we read; only a stable mapping with a bad CRC is damage.
      if ((this.map.phys[lba] !== p || this.map.lsn[lba] !== lsn || this.unflushed.has(lba)) && attempt < 3) continue;
      this.map.damaged[lba] = 1;
      this.counters.inc("VOLUME_BLOCK_DAMAGED");
      throw new DamagedBlockError(lba, { lsn, physicalBlock: p });
    }
  }

  private async runBatch(batch: Op[]): Promise<void> {
    if (this.failure !== undefined) {
      // Queued before the volume fenced itself: refuse rather than run on half-applied state.
      for (const op of batch) op.reject(new VolumeClosedError("volume failed after an I/O error and is fenced"));
      return;
    }
    this.st.batches++;
    const muts = batch.filter((o): o is MutOp => o.kind === "write" || o.kind === "trim");
    this.st.writes += muts.filter((o) => o.kind === "write").length;
    if (muts.length > 0) {
      if (this.alloc) await this.applySmart(muts);
      else await this.applyInline(muts);
    }
    const wantsSync = batch.some((o) => o.kind === "sync" || o.kind === "checkpoint");
    if (wantsSync) {
      const d = await this.syncWal();
      for (const o of batch) if (o.kind === "sync") o.resolve(d);
    }
    if (batch.some((o) => o.kind === "checkpoint")) {
      const l = await this.writeCheckpointNow();
      for (const o of batch) if (o.kind === "checkpoint") o.resolve(l);
    }
    for (const o of batch) {
      if (o.kind !== "exclusive") continue;
      try {
        o.resolve(await o.run());
      } catch (err) {
        this.count(err);
        o.reject(err);
      }
    }
    await this.maintain();
  }

  /** SmartWAL: allocate → pwrite → one extent barrier (I1) → WAL records, in groups that fit. */
  private async applySmart(ops: MutOp[]): Promise<void> {
    const alloc = this.alloc!;
    let group: { op: MutOp; runs: PhysicalRun[] }[] = [];
    let groupRecords = 0;
    for (const op of ops) {
      const blocks = op.kind === "write" ? op.data.length / BLOCK_SIZE : 0;
      const fits = () => alloc.freeCount() >= blocks && this.ring.freeSlots() >= groupRecords + Math.max(1, blocks);
      if (!fits()) {
        await this.commitSmart(group);
        group = [];
        groupRecords = 0;
        await this.syncWal();
        if (!fits()) await this.writeCheckpointNow();
        if (!fits()) {
          const err = new NoSpaceError("no free blocks or WAL slots even after a checkpoint", { blocks, free: alloc.freeCount() });
          this.count(err);
          op.reject(err);
          continue;
        }
      }
      const runs = blocks > 0 ? alloc.allocate(blocks)! : [];
      group.push({ op, runs });
      groupRecords += Math.max(1, blocks);
    }
    await this.commitSmart(group);
  }

  private async commitSmart(group: { op: MutOp; runs: PhysicalRun[] }[]): Promise<void> {
    if (group.length === 0) return;
    const plan = planCommit(group.map(({ op, runs }) => ({ ...op, runs })), this.ring.head, this.geometry.epoch, false, this.durableLsn);
    await Promise.all(coalesceWrites(plan.extentWrites).map((w) => this.files.extent.write(w.data, 0, w.data.length, w.offset)));
    this.applyRecords(plan.records); // admitted: reads now see the new blocks (G2)
    if (plan.extentWrites.length > 0) {
      await this.files.extent.datasync(); // I1: data durable before any record names it
      this.st.extentSyncs++;
    }
    await this.ring.append(plan.records);
    group.forEach(({ op }, i) => op.resolve(plan.lastLsn[i]!));
  }

  /** Points the map at each record's block (SmartWAL: supersede the old one; inline: keep the payload until flushed). */
  private applyRecords(records: readonly WalRecord[]): void {
    for (const r of records) {
      if (r.flag === RecordFlag.Trim) {
        this.applyTrim(r.lba, r.blockCount, r.lsn);
        continue;
      }
      if (r.payload) {
        this.unflushed.set(r.lba, r.payload);
        this.map.set(r.lba, r.lba, r.dataCrc, r.lsn);
      } else {
        const old = this.map.set(r.lba, r.physicalOffset / BLOCK_SIZE, r.dataCrc, r.lsn);
        if (old !== UNMAPPED) this.alloc!.supersede(old, r.lsn);
      }
      this.markPeers(r.lba, 1, r.lsn);
      this.st.blocksWritten++;
    }
  }

  private applyTrim(lba: number, count: number, lsn: number): void {
    for (let k = 0; k < count; k++) {
      const old = this.map.unmap(lba + k, lsn);
      this.unflushed.delete(lba + k);
      if (old !== UNMAPPED && this.alloc) this.alloc.supersede(old, lsn);
    }
    this.markPeers(lba, count, lsn);
    this.st.trims++;
  }

  /** Inline: the payload goes into the WAL (one record per block); the flusher copies it to the extent later. */
  private async applyInline(ops: MutOp[]): Promise<void> {
    let slice: MutOp[] = [];
    let need = 0;
    for (const op of ops) {
      const n = op.kind === "write" ? op.data.length / BLOCK_SIZE : 1;
      if (need + n > this.ring.freeSlots()) {
        await this.commitInline(slice);
        slice = [];
        need = 0;
        await this.flushInline(); // empties the ring; n ≤ capacity / 2 was checked at submit
      }
      slice.push(op);
      need += n;
    }
    await this.commitInline(slice);
  }

  private async commitInline(ops: MutOp[]): Promise<void> {
    if (ops.length === 0) return;
    const plan = planCommit(ops, this.ring.head, this.geometry.epoch, true, this.durableLsn);
    await this.ring.append(plan.records);
    this.applyRecords(plan.records);
    ops.forEach((op, i) => op.resolve(plan.lastLsn[i]!));
  }

  /** Inline flusher: WAL durable first (log before data), copy payloads in place, barrier, checkpoint. */
  private async flushInline(): Promise<void> {
    await this.syncWal();
    const entries = [...this.unflushed.entries()];
    await Promise.all(entries.map(([lba, data]) => this.files.extent.write(data, 0, BLOCK_SIZE, lba * BLOCK_SIZE)));
    if (entries.length > 0) {
      await this.files.extent.datasync();
      this.st.extentSyncs++;
    }
    this.unflushed.clear();
    this.st.flushes++;
    await this.writeCheckpointNow();
  }

  private async syncWal(): Promise<number> {
    const head = this.ring.head;
    if (head > this.durableLsn) {
      await this.ring.sync();
      this.st.walSyncs++;
      this.durableLsn = head;
    }
    this.alloc?.durableThrough(this.durableLsn);
    return this.durableLsn;
  }

  /** Writes a checkpoint of the current map at the (durable) head into the other slot. */
  private async writeCheckpointNow(): Promise<number> {
    if (!this.alloc && this.unflushed.size > 0) {
      await this.flushInline(); // it ends by calling back here with nothing unflushed
      return this.ring.checkpointLsn;
    }
    await this.syncWal();
    const snap = this.map.clone();
    const lsn = this.ring.head;
    const slot = 1 - this.checkpointSlot;
    const sequence = this.checkpointSeq + 1;
    await writeCheckpoint(this.files.checkpoints[slot]!, { sequence, lsn, ringStartSlot: lsn % this.geometry.walCapacity, epoch: this.geometry.epoch, map: snap });
    this.checkpointSeq = sequence;
    this.checkpointSlot = slot;
    this.checkpointMap = snap;
    this.ring.checkpointLsn = lsn;
    if (this.alloc) {
      const named: number[] = [];
      for (let l = 0; l < snap.blockCount; l++) if (snap.phys[l] !== UNMAPPED) named.push(snap.phys[l]!);
      this.alloc.setCheckpointHolds(named);
    }
    this.st.checkpoints++;
    return lsn;
  }

  /** Background hygiene between batches: checkpoint (or flush) before the ring or the spare runs low. */
  private async maintain(): Promise<void> {
    const ringLow = this.ring.freeSlots() < this.geometry.walCapacity / 2;
    if (this.alloc) {
      if (ringLow || this.alloc.freeCount() < Math.max(1, Math.floor(this.spare / 2))) await this.writeCheckpointNow();
    } else if (ringLow) await this.flushInline();
  }

  private markPeers(lba: number, count: number, lsn: number): void {
    for (const d of this.peers.values()) d.mark(lba, count, lsn);
  }
}

async function closeAll(h: VolumeHandles): Promise<void> {
  await Promise.all([h.extent, h.wal, ...h.checkpoints].map((f) => f.close().catch(() => undefined)));
}
