import { crc32 } from "node:zlib";
import { systemClock } from "../core/index.ts";
import { Counters } from "../core/index.ts";
import { isCustodyError } from "../core/index.ts";
import { nodeFileLayer, type FileLayer } from "../core/index.ts";
import { Hold } from "./allocator.ts";
import { UNMAPPED, type BlockMap } from "./block-map.ts";
import { CommitEngine, type MountedState, type MutOp, type Op } from "./commit-engine.ts";
import { CheckpointCorruptError, BadRequestError, DamagedBlockError, VolumeClosedError } from "./volume-errors.ts";
import { loadCheckpoint } from "./checkpoint.ts";
import { DirtyMap } from "./dirty-map.ts";
import { BLOCK_SIZE, maxWriteBlocks, VolumeLayout, VolumeMode, type VolumeGeometry } from "./format.ts";
import { GroupCommit } from "./group-commit.ts";
import { classifyLsn, RecoverabilityClass, type DurabilityProof } from "./recoverability.ts";
import { recover } from "./recovery.ts";
import { WalDamagedError, type RecoveryReport } from "./recovery-report.ts";
import { createVolumeFiles, openVolumeFiles, type CreateVolumeOptions, type VolumeHandles } from "./volume-files.ts";
import type { OpenVolumeOptions, SnapshotBlock, VolumeStats, WalEntry } from "./volume-types.ts";

export type { ExtentBarrier, OpenVolumeOptions, SnapshotBlock, VolumeStats, WalEntry } from "./volume-types.ts";

/**
 * A single-node block volume in SmartWAL mode (data to a free extent block, an extent fdatasync
 * barrier — per group, or at SyncCache by default, see ExtentBarrier — and 64-byte WAL records) or inline mode (full
 * payload in the WAL, flushed to the extent later), with group commit, copy-on-write allocation, checkpoints and crash
 * recovery. A write resolves with its LSN once admitted; `syncCache()` makes every admitted write durable
 * and returns the durable LSN. Reads return admitted data (G2) or throw DamagedBlockError.
 * All I/O goes through the FileLayer seam; time through the Clock seam.
 */
export class SmartWalVolume {
  private readonly engine: CommitEngine;
  private readonly queue: GroupCommit<Op>;
  private readonly counters: Counters;
  private readonly peers = new Map<string, DirtyMap>();
  private failure: unknown;
  private closed = false;
  private snapshotReads: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly dir: string,
    readonly geometry: VolumeGeometry,
    private readonly files: VolumeHandles,
    state: MountedState,
    /** What mount-time recovery found. */
    readonly recovery: RecoveryReport,
    opts: OpenVolumeOptions,
  ) {
    this.counters = opts.counters ?? new Counters();
    this.engine = new CommitEngine(
      geometry,
      files,
      state,
      this.counters,
      (lba, count, lsn) => this.markPeers(lba, count, lsn),
      opts.extentBarrier,
    );
    this.queue = new GroupCommit<Op>(
      { maxBatch: opts.maxBatch ?? 64, maxDelayMs: opts.maxDelayMs ?? 0, clock: opts.clock ?? systemClock },
      (batch) => this.runBatch(batch),
      (err, batch) => this.fail(err, batch),
    );
  }

  /** Creates a new volume at `dir` (see createVolumeFiles); does not open it. */
  static async create(
    dir: string,
    opts: CreateVolumeOptions,
    fileLayer: FileLayer = nodeFileLayer,
  ): Promise<VolumeGeometry> {
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
      const rec = await recover(g, ckpt, loaded.slot, loaded.issues, handles, {
        scrub: opts.scrub ?? false,
        acceptLoss: opts.acceptLoss ?? false,
      });
      const vol = new SmartWalVolume(
        dir,
        g,
        handles,
        {
          map: rec.map,
          lastLsn: rec.lastLsn,
          checkpointMap,
          checkpointLsn: ckpt.lsn,
          checkpointSeq: ckpt.sequence,
          checkpointSlot: loaded.slot,
        },
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
      const blocks =
        data instanceof Uint8Array && data.length > 0 && data.length % BLOCK_SIZE === 0 ? data.length / BLOCK_SIZE : 0;
      if (blocks === 0)
        throw new BadRequestError(`data must be a positive multiple of ${BLOCK_SIZE} bytes`, {
          length: (data as Uint8Array)?.length,
        });
      this.checkRange(lba, blocks);
      const limit = maxWriteBlocks(this.geometry);
      if (blocks > limit)
        throw new BadRequestError(
          `a single write may span at most ${limit} blocks ` +
            `(spare ${this.geometry.physicalBlocks - this.geometry.blockCount}, ` +
            `WAL ring ${this.geometry.walCapacity} slots)`,
          { blocks, limit },
        );
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
    await Promise.all(
      Array.from({ length: count }, (_, k) =>
        this.readBlock(lba + k, out.subarray(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE)),
      ),
    );
    return out;
  }

  /** LBAs currently known damaged (from recovery or a failed read CRC). */
  damagedLbas(): number[] {
    return this.engine.map.damagedLbas();
  }

  /** The WAL window: first LSN still held (checkpoint LSN + 1), newest LSN, durable LSN. */
  walWindow(): { start: number; head: number; durable: number; checkpointLsn: number } {
    return {
      start: this.engine.ring.checkpointLsn + 1,
      head: this.engine.ring.head,
      durable: this.engine.durableLsn,
      checkpointLsn: this.engine.ring.checkpointLsn,
    };
  }

  /** What the last completed syncCache proves (memo section 9). */
  durabilityProof(): DurabilityProof {
    const inline = this.geometry.mode === VolumeMode.Inline;
    return {
      durableLsn: this.engine.durableLsn,
      epoch: this.geometry.epoch,
      checkpointLsn: this.engine.ring.checkpointLsn,
      recoverability: inline ? RecoverabilityClass.Inline : RecoverabilityClass.ExtentReferenced,
      barriers: inline
        ? ["wal_fsync"]
        : this.geometry.layout === VolumeLayout.OneFile
          ? ["shared_fdatasync"]
          : ["extent_fdatasync", "wal_fsync"],
    };
  }

  /** Recoverability class of the write with `lsn`. */
  recoverabilityOf(lsn: number): RecoverabilityClass {
    return classifyLsn(lsn, this.engine.ring.checkpointLsn, this.geometry.mode === VolumeMode.Inline);
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
        const start = this.engine.ring.checkpointLsn + 1;
        if (!Number.isSafeInteger(lsn) || lsn < 0 || lsn + 1 < start) {
          throw new BadRequestError(`LSN ${lsn} is before the WAL window starting at ${start}`, {
            lsn,
            walStart: start,
          });
        }
        const { records, unreadable } = await this.engine.ring.readRecords(lsn + 1, this.engine.ring.head);
        if (unreadable.length > 0)
          throw new WalDamagedError(`WAL records ${unreadable.join(",")} are unreadable`, unreadable);
        out = records.map((r) => ({ lsn: r.lsn, flag: r.flag, lba: r.lba, blockCount: r.blockCount }));
        return this.engine.ring.head;
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
    if (!this.engine.alloc) throw new BadRequestError("checkpoint-consistent reads need SmartWAL mode");
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
    if (!d) this.peers.set(peer, (d = new DirtyMap(this.geometry.blockCount, this.engine.ring.head)));
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
    if (!this.engine.alloc) throw new BadRequestError("checkpoint-consistent reads need SmartWAL mode");
    for (const l of lbas) this.checkRange(l, 1);
    return this.readSnapshot(() => lbas);
  }

  private readSnapshot(
    select: (snap: BlockMap) => readonly number[],
  ): Promise<{ checkpointLsn: number; blocks: SnapshotBlock[] }> {
    const run = async () => {
      const alloc = this.engine.alloc!;
      const snap = this.engine.checkpointMap;
      const lsn = this.engine.ring.checkpointLsn;
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
          if (snap.damaged[lba] || crc32(data) >>> 0 !== snap.crc[lba])
            throw new DamagedBlockError(lba, { checkpointLsn: lsn });
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
    return {
      ...this.engine.st,
      walBytes: this.engine.ring.bytesWritten,
      freeBlocks: this.engine.alloc?.freeCount() ?? 0,
    };
  }

  /** Waits for queued operations, then closes the files. Does not sync: call syncCache() first for durability. */
  async close(): Promise<void> {
    if (this.closed) return;
    while (this.queue.busy) await new Promise((r) => setImmediate(r));
    this.closed = true;
    await this.snapshotReads;
    await this.engine.beforeClose().catch(() => undefined); // best effort: a failed write here loses nothing
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
    if (this.failure !== undefined)
      throw new VolumeClosedError("volume failed after an I/O error and is fenced", { cause: String(this.failure) });
  }

  private checkRange(lba: number, count: number): void {
    if (
      !Number.isInteger(lba) ||
      !Number.isInteger(count) ||
      lba < 0 ||
      count < 1 ||
      lba + count > this.geometry.blockCount
    ) {
      throw new BadRequestError(`range ${lba}+${count} is outside the volume (0..${this.geometry.blockCount - 1})`, {
        lba,
        count,
      });
    }
  }

  private fail(err: unknown, batch: Op[]): void {
    // State may be half-applied after an I/O error: fence the volume rather than guess.
    this.failure = err;
    for (const op of batch) op.reject(err);
  }

  private async readBlock(lba: number, into: Uint8Array): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (this.engine.map.damaged[lba]) {
        this.counters.inc("volume_block_damaged");
        throw new DamagedBlockError(lba, { lsn: this.engine.map.lsn[lba] });
      }
      const pending = this.engine.unflushed.get(lba);
      if (pending) {
        into.set(pending);
        return;
      }
      const p = this.engine.map.phys[lba]!;
      if (p === UNMAPPED) {
        into.fill(0);
        return;
      }
      const lsn = this.engine.map.lsn[lba]!;
      into.fill(0);
      await this.files.extent.read(into, 0, BLOCK_SIZE, p * BLOCK_SIZE);
      if (crc32(into) >>> 0 === this.engine.map.crc[lba]) return;
      // A write may have moved the LBA while we read; only a stable mapping with a bad CRC is damage.
      if (
        (this.engine.map.phys[lba] !== p || this.engine.map.lsn[lba] !== lsn || this.engine.unflushed.has(lba)) &&
        attempt < 3
      )
        continue;
      this.engine.map.damaged[lba] = 1;
      this.counters.inc("volume_block_damaged");
      throw new DamagedBlockError(lba, { lsn, physicalBlock: p });
    }
  }

  private async runBatch(batch: Op[]): Promise<void> {
    if (this.failure !== undefined) {
      // Queued before the volume fenced itself: refuse rather than run on half-applied state.
      for (const op of batch) op.reject(new VolumeClosedError("volume failed after an I/O error and is fenced"));
      return;
    }
    this.engine.st.batches++;
    const muts = batch.filter((o): o is MutOp => o.kind === "write" || o.kind === "trim");
    this.engine.st.writes += muts.filter((o) => o.kind === "write").length;
    if (muts.length > 0) {
      if (this.engine.alloc) await this.engine.applySmart(muts);
      else await this.engine.applyInline(muts);
    }
    const wantsSync = batch.some((o) => o.kind === "sync" || o.kind === "checkpoint");
    if (wantsSync) {
      const d = await this.engine.syncWal();
      for (const o of batch) if (o.kind === "sync") o.resolve(d);
    }
    if (batch.some((o) => o.kind === "checkpoint")) {
      const l = await this.engine.writeCheckpointNow();
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
    await this.engine.maintain();
  }

  private markPeers(lba: number, count: number, lsn: number): void {
    for (const d of this.peers.values()) d.mark(lba, count, lsn);
  }
}

async function closeAll(h: VolumeHandles): Promise<void> {
  await Promise.all([h.extent, h.wal, ...h.checkpoints].map((f) => f.close().catch(() => undefined)));
}
