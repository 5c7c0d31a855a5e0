import type { Counters } from "../core/index.ts";
import { isCustodyError } from "../core/index.ts";
import { Allocator, Hold, type PhysicalRun } from "./allocator.ts";
import { UNMAPPED, type BlockMap } from "./block-map.ts";
import { writeCheckpoint } from "./checkpoint.ts";
import { coalesceWrites, planCommit } from "./commit-plan.ts";
import { BLOCK_SIZE, VolumeLayout, VolumeMode, type VolumeGeometry } from "./format.ts";
import type { VolumeHandles } from "./volume-files.ts";
import { NoSpaceError } from "./volume-errors.ts";
import { RecordFlag, type WalRecord } from "./wal-record.ts";
import { WalRing } from "./wal-ring.ts";
import { writeSyncMark } from "./sync-mark.ts";
import type { ExtentBarrier } from "./volume-types.ts";

/** An operation queued for group commit; every one resolves with an LSN. */
export type Op =
  | { kind: "write"; lba: number; data: Uint8Array; resolve: (lsn: number) => void; reject: (e: unknown) => void }
  | { kind: "trim"; lba: number; count: number; resolve: (lsn: number) => void; reject: (e: unknown) => void }
  | { kind: "sync" | "checkpoint"; resolve: (lsn: number) => void; reject: (e: unknown) => void }
  | { kind: "exclusive"; run: () => Promise<number>; resolve: (lsn: number) => void; reject: (e: unknown) => void };
export type MutOp = Extract<Op, { kind: "write" | "trim" }>;

/** Where a mounted volume starts: the recovered map and head, and the checkpoint it was read from. */
export interface MountedState {
  map: BlockMap;
  lastLsn: number;
  checkpointMap: BlockMap;
  checkpointLsn: number;
  checkpointSeq: number;
  checkpointSlot: number;
}

/**
 * The write side of a volume: applies admitted mutations (SmartWAL: data to free extent blocks,
 * one barrier, then records; inline: payloads in the WAL, flushed later), syncs the WAL, writes
 * checkpoints and keeps the allocator's holds. The volume's reads look at the state it keeps
 * (`map`, `unflushed`, `checkpointMap`, `durableLsn`), which only this class changes.
 */
export class CommitEngine {
  readonly map: BlockMap;
  readonly alloc: Allocator | undefined;
  readonly ring: WalRing;
  /** Inline mode: admitted payloads not yet copied to the extent. */
  readonly unflushed = new Map<number, Uint8Array>();
  /** The map as of the latest checkpoint (what checkpoint-consistent reads see). */
  checkpointMap: BlockMap;
  durableLsn: number;
  readonly st = {
    writes: 0,
    trims: 0,
    blocksWritten: 0,
    extentSyncs: 0,
    extentWrites: 0,
    walSyncs: 0,
    checkpoints: 0,
    flushes: 0,
    batches: 0,
  };
  private checkpointSeq: number;
  private checkpointSlot: number;
  /** Extent blocks beyond the volume size: the most one write may allocate. */
  readonly spare: number;
  /** SmartWAL `sync-cache` barrier: extent data written since the last extent fdatasync. */
  private extentDirty = false;
  private readonly deferBarrier: boolean;
  /** Extent and WAL are regions of one file (VolumeLayout.OneFile): one fdatasync makes both durable. */
  private readonly oneFile: boolean;
  /**
   * Highest LSN recovery is sure to take as extent-covered (a durable sync mark or checkpoint, or
   * records never data-checked): a superseded block is reused only once this covers the record
   * that superseded it, so recovery never checks a record whose block was rewritten.
   */
  private coveredLsn: number;
  /** One-file layout: the LSN of the last sync mark written (durable once an fdatasync followed it). */
  private markWritten: number;

  constructor(
    private readonly geometry: VolumeGeometry,
    private readonly files: VolumeHandles,
    state: MountedState,
    private readonly counters: Counters,
    /** Told of every change, for the peers' dirty maps. */
    private readonly markPeers: (lba: number, count: number, lsn: number) => void,
    extentBarrier: ExtentBarrier = "sync-cache",
  ) {
    this.deferBarrier = geometry.mode === VolumeMode.SmartWal && extentBarrier === "sync-cache";
    this.oneFile = geometry.layout === VolumeLayout.OneFile;
    this.map = state.map;
    this.checkpointMap = state.checkpointMap;
    this.checkpointSeq = state.checkpointSeq;
    this.checkpointSlot = state.checkpointSlot;
    this.durableLsn = state.lastLsn;
    // Recovery left a durable mark at its end when deferred records were replayed.
    this.coveredLsn = state.lastLsn;
    this.markWritten = state.lastLsn;
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
  }

  private count(err: unknown): void {
    if (isCustodyError(err)) this.counters.inc(err.code);
  }

  /**
   * SmartWAL: allocate → pwrite → one extent barrier (I1) → WAL records, in groups that fit. With
   * the `sync-cache` barrier the fdatasync moves to syncWal and the records carry the deferred flag.
   */
  async applySmart(ops: MutOp[]): Promise<void> {
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
        if (!fits()) await this.settleMark();
        if (!fits()) await this.writeCheckpointNow();
        if (!fits()) {
          const err = new NoSpaceError("no free blocks or WAL slots even after a checkpoint", {
            blocks,
            free: alloc.freeCount(),
          });
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
    const plan = planCommit(
      group.map(({ op, runs }) => ({ ...op, runs })),
      this.ring.head,
      this.geometry.epoch,
      false,
      this.durableLsn,
      this.deferBarrier,
    );
    const runs = coalesceWrites(plan.extentWrites);
    this.st.extentWrites += runs.length;
    const extentWrites = runs.map((w) => this.files.extent.write(w.data, 0, w.data.length, w.offset));
    if (this.deferBarrier) {
      // Records may reach the disk before their data anyway (recovery checks them), so data and
      // records go out together: one I/O round trip.
      await Promise.all([...extentWrites, this.ring.append(plan.records)]);
      this.applyRecords(plan.records); // admitted once the data is written: reads now see the new blocks (G2)
      this.extentDirty ||= plan.extentWrites.length > 0;
    } else {
      await Promise.all(extentWrites);
      this.applyRecords(plan.records); // admitted: reads now see the new blocks (G2)
      if (plan.extentWrites.length > 0) {
        await this.files.extent.datasync(); // I1: data durable before any record names it
        this.st.extentSyncs++;
      }
      await this.ring.append(plan.records);
    }
    group.forEach(({ op }, i) => op.resolve(plan.lastLsn[i]!));
  }

  /**
   * Points the map at each record's block (SmartWAL: supersede the old one; inline: keep the payload until flushed).
   */
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
  async applyInline(ops: MutOp[]): Promise<void> {
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
    this.st.extentWrites += entries.length;
    await Promise.all(entries.map(([lba, data]) => this.files.extent.write(data, 0, BLOCK_SIZE, lba * BLOCK_SIZE)));
    if (entries.length > 0) {
      await this.files.extent.datasync();
      this.st.extentSyncs++;
    }
    this.unflushed.clear();
    this.st.flushes++;
    await this.writeCheckpointNow();
  }

  /**
   * SyncCache: makes every appended record durable and returns the durable LSN. With the deferred
   * barrier on split files it first fdatasyncs the extent, then writes the sync mark (extent covered
   * through the head) so that the WAL's one fdatasync makes records and mark durable together. On
   * one file a single fdatasync covers data and records; see syncShared.
   */
  async syncWal(): Promise<number> {
    const head = this.ring.head;
    if (head > this.durableLsn && this.deferBarrier && this.oneFile) await this.syncShared(head);
    else if (head > this.durableLsn) {
      if (this.deferBarrier) {
        if (this.extentDirty) {
          await this.files.extent.datasync(); // I1 at SyncCache: data durable before the mark says so
          this.st.extentSyncs++;
          this.extentDirty = false;
        }
        await writeSyncMark(this.files.wal, this.geometry, head);
      }
      await this.ring.sync();
      this.st.walSyncs++;
      this.durableLsn = head;
      this.coveredLsn = head;
    }
    this.alloc?.durableThrough(this.coveredLsn);
    return this.durableLsn;
  }

  /**
   * One-file layout, deferred barrier: ONE fdatasync makes data and records durable. They are not
   * ordered inside it, so nothing written before it may claim its data is covered. What recovery
   * takes as extent-covered after it is the previous durable LSN: every record appended since
   * carries it as its durable watermark (and a sync mark written at close or by settleMark counts
   * too). No mark is written on this path. Blocks superseded after the previous SyncCache are
   * therefore not reused yet (coveredLsn lags one SyncCache; settleMark closes the gap when space
   * is short).
   */
  private async syncShared(head: number): Promise<void> {
    const previous = this.durableLsn; // the watermark of every record appended since
    await this.ring.sync();
    this.st.walSyncs++;
    this.extentDirty = false;
    this.coveredLsn = Math.max(this.coveredLsn, previous, this.markWritten);
    this.durableLsn = head;
  }

  /**
   * One-file layout, deferred barrier: writes the mark at the durable LSN when the one on file is older (not synced).
   */
  private async writeLaggingMark(): Promise<void> {
    if (!this.deferBarrier || !this.oneFile || this.markWritten >= this.durableLsn) return;
    const lsn = this.durableLsn;
    await writeSyncMark(this.files.wal, this.geometry, lsn);
    this.markWritten = Math.max(this.markWritten, lsn);
  }

  /** One-file layout: makes the mark at the durable LSN durable (one more fdatasync) when blocks wait for it. */
  private async settleMark(): Promise<void> {
    await this.writeLaggingMark();
    if (this.markWritten <= this.coveredLsn) return;
    await this.ring.sync();
    this.st.walSyncs++;
    this.coveredLsn = this.markWritten;
    this.alloc?.durableThrough(this.coveredLsn);
  }

  /** Before the files close: the mark names the last SyncCache's head (written, not synced: close does not sync). */
  async beforeClose(): Promise<void> {
    await this.writeLaggingMark();
  }

  /** Writes a checkpoint of the current map at the (durable) head into the other slot. */
  async writeCheckpointNow(): Promise<number> {
    if (!this.alloc && this.unflushed.size > 0) {
      await this.flushInline(); // it ends by calling back here with nothing unflushed
      return this.ring.checkpointLsn;
    }
    await this.syncWal();
    const snap = this.map.clone();
    const lsn = this.ring.head;
    const slot = 1 - this.checkpointSlot;
    const sequence = this.checkpointSeq + 1;
    await writeCheckpoint(this.files.checkpoints[slot]!, {
      sequence,
      lsn,
      ringStartSlot: lsn % this.geometry.walCapacity,
      epoch: this.geometry.epoch,
      map: snap,
    });
    this.checkpointSeq = sequence;
    this.checkpointSlot = slot;
    this.checkpointMap = snap;
    this.ring.checkpointLsn = lsn;
    // Recovery takes the checkpoint LSN as extent-covered: blocks superseded up to it may be reused.
    this.coveredLsn = Math.max(this.coveredLsn, lsn);
    this.alloc?.durableThrough(this.coveredLsn);
    if (this.alloc) {
      const named: number[] = [];
      for (let l = 0; l < snap.blockCount; l++) if (snap.phys[l] !== UNMAPPED) named.push(snap.phys[l]!);
      this.alloc.setCheckpointHolds(named);
    }
    this.st.checkpoints++;
    return lsn;
  }

  /** Background hygiene between batches: checkpoint (or flush) before the ring or the spare runs low. */
  async maintain(): Promise<void> {
    const ringLow = this.ring.freeSlots() < this.geometry.walCapacity / 2;
    if (this.alloc) {
      if (ringLow || this.alloc.freeCount() < Math.max(1, Math.floor(this.spare / 2))) await this.writeCheckpointNow();
    } else if (ringLow) await this.flushInline();
  }
}
