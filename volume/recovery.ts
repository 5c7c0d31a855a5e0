import { crc32 } from "node:zlib";
import type { FileHandleLike } from "../core/index.ts";
import { BlockMap, UNMAPPED } from "./block-map.ts";
import type { Checkpoint, CheckpointIssue } from "./checkpoint.ts";
import { BLOCK_SIZE, VolumeMode, type VolumeGeometry } from "./format.ts";
import { scanRing, walkLog, type LostRecord, type ReplayStop } from "./ring-scan.ts";
import { WalDamagedError, type DamagedEntry, type RecoveryReport } from "./recovery-report.ts";
import { RecordFlag, type WalRecord } from "./wal-record.ts";
import { readSyncMark, writeSyncMark } from "./sync-mark.ts";
import { cutAtUnsyncedData } from "./unsynced-cut.ts";

export { ReplayStop, type LostRecord } from "./ring-scan.ts";
export type { DamagedEntry, RecoveryReport } from "./recovery-report.ts";

/** The rebuilt in-memory state handed to the volume. */
export interface RecoveredState {
  map: BlockMap;
  lastLsn: number;
  report: RecoveryReport;
}

/**
 * Replays the WAL ring from checkpoint `ckpt`. The ring is scanned once and walked in LSN order
 * (see walkLog): the log ends only where a crash can have cut it; unreadable records before that
 * point are lost records, and the records after them still replay. With lost records and no
 * `acceptLoss`, throws WalDamagedError carrying the report before anything is written. Then the
 * data of every record that still owns an LBA is verified against its CRC (I5: a mismatch marks
 * the LBA damaged, never silent wrong data); records superseded within the replay are not
 * verified (their blocks may have been reused). Inline mode redoes each surviving payload into the
 * extent. Records and garbage past the end are erased so a later append can never be followed by
 * a stale record from before the crash. Ends with fdatasync of extent and ring.
 */
export async function recover(
  g: VolumeGeometry,
  ckpt: Checkpoint,
  ckptSlot: number,
  checkpointIssues: CheckpointIssue[],
  files: { extent: FileHandleLike; wal: FileHandleLike },
  opts: { scrub?: boolean; acceptLoss?: boolean } = {},
): Promise<RecoveredState> {
  const map = ckpt.map.clone();
  const scan = await scanRing(g, files.wal, ckpt.lsn, ckpt.ringStartSlot);
  const durableProofLsn = Math.max(ckpt.lsn, scan.maxWatermark);
  const mark = g.mode === VolumeMode.SmartWal ? await readSyncMark(files.wal, g) : undefined;
  const extentCoveredLsn = Math.max(durableProofLsn, mark ?? 0);
  const { walk, cutRecords } = await cutAtUnsyncedData(
    walkLog(scan, durableProofLsn),
    scan,
    files.extent,
    extentCoveredLsn,
  );
  const records = walk.records;

  const owner = applyRecords(g, map, records);
  // Verify (reads only); inline redo writes wait until the mount is known to go on.
  const { damaged, redo } = await verifyOwnedData(g, map, records, owner, files.extent);
  const scrubbedBlocks = opts.scrub ? await scrubUnreplayed(g, map, owner, files.extent, ckpt.lsn, damaged) : 0;

  const lastLsn = walk.endLsn - 1;
  damaged.sort((a, b) => a.lba - b.lba);
  const lossAccepted = walk.lost.length > 0 && opts.acceptLoss === true;
  const report: RecoveryReport = {
    mode: g.mode,
    checkpoint: { slot: ckptSlot, sequence: ckpt.sequence, lsn: ckpt.lsn },
    checkpointIssues,
    replayedRecords: records.length,
    lastLsn,
    nextLsn: lastLsn + 1,
    stopReason: walk.stop.reason,
    stopDetail: { slot: walk.stop.slot, ...(walk.stop.foundLsn !== undefined ? { foundLsn: walk.stop.foundLsn } : {}) },
    erasedTailRecords: 0,
    durableProofLsn,
    extentCoveredLsn,
    unsyncedCutRecords: cutRecords,
    lostRecords: walk.lost,
    lossAccepted,
    damaged,
    knownDamaged: map.damagedLbas(),
    scrubbedBlocks,
    mappedBlocks: map.mappedCount(),
  };
  if (walk.lost.length > 0 && !lossAccepted) {
    const lsns = walk.lost.map((l) => l.lsn);
    throw new WalDamagedError(
      `WAL damaged: ${lsns.length} record(s) of the log are unreadable (LSN ${lsns.join(",")}); ` +
        "not mounted without accepting the loss",
      lsns,
      report,
    );
  }

  // Every replayed record's data is durable now: the mark moves to the end (a stale mark past it
  // would later make an unsynced record at a reused LSN look covered, and damage of a crash image).
  // It is also written when deferred records were replayed: the mount frees the blocks they
  // superseded, so the next recovery must not check those records against reused blocks.
  const deferred = records.some((r) => r.deferredBarrier === true);
  const moveMark = g.mode === VolumeMode.SmartWal && (mark !== undefined || cutRecords > 0 || deferred);
  await finishMount(g, files, redo, walk.staleSlots, moveMark ? lastLsn : undefined);
  report.erasedTailRecords = walk.staleSlots.length;
  return { map, lastLsn, report };
}

/**
 * Applies `records` to `map` in LSN order; returns, per LBA, the index of the record owning it at
 * the end (-1: none).
 */
function applyRecords(g: VolumeGeometry, map: BlockMap, records: readonly WalRecord[]): Int32Array {
  const owner = new Int32Array(g.blockCount).fill(-1);
  records.forEach((r, idx) => {
    for (let k = 0; k < r.blockCount; k++) {
      const lba = r.lba + k;
      if (r.flag === RecordFlag.Trim) {
        map.unmap(lba, r.lsn);
        owner[lba] = -1;
      } else {
        const phys = g.mode === VolumeMode.Inline ? lba : r.physicalOffset / BLOCK_SIZE + k;
        map.set(lba, phys, 0, r.lsn);
        owner[lba] = idx;
      }
    }
  });

  return owner;
}

/**
 * Checks the data of every record that still owns an LBA against its CRC: a mismatch marks the
 * LBA damaged; a good block gets its CRC in the map and, in inline mode, is queued for redo.
 */
async function verifyOwnedData(
  g: VolumeGeometry,
  map: BlockMap,
  records: readonly WalRecord[],
  owner: Int32Array,
  extent: FileHandleLike,
): Promise<{ damaged: DamagedEntry[]; redo: { lba: number; block: Uint8Array }[] }> {
  const damaged: DamagedEntry[] = [];
  const redo: { lba: number; block: Uint8Array }[] = [];
  const verified = new Set<number>();
  for (let lba = 0; lba < g.blockCount; lba++) {
    const idx = owner[lba]!;
    if (idx < 0 || verified.has(idx)) continue;
    verified.add(idx);
    const r = records[idx]!;
    const data = g.mode === VolumeMode.Inline ? r.payload! : await readRun(extent, r.physicalOffset, r.blockCount);
    const ok = crc32(data) >>> 0 === r.dataCrc;
    for (let k = 0; k < r.blockCount; k++) {
      const l = r.lba + k;
      if (owner[l] !== idx) continue;
      if (!ok) {
        map.damaged[l] = 1;
        damaged.push({ lba: l, lsn: r.lsn });
        continue;
      }
      const block = data.subarray(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE);
      map.crc[l] = crc32(block) >>> 0;
      if (g.mode === VolumeMode.Inline) redo.push({ lba: l, block });
    }
  }

  return { damaged, redo };
}

/** Re-verifies the checkpoint-named blocks no replayed record owns (scrub); a failure is added to `damaged`. */
async function scrubUnreplayed(
  g: VolumeGeometry,
  map: BlockMap,
  owner: Int32Array,
  extent: FileHandleLike,
  ckptLsn: number,
  damaged: DamagedEntry[],
): Promise<number> {
  let scrubbedBlocks = 0;
  const buf = new Uint8Array(BLOCK_SIZE);
  for (let lba = 0; lba < g.blockCount; lba++) {
    if (owner[lba]! >= 0 || map.phys[lba] === UNMAPPED || map.damaged[lba]) continue;
    scrubbedBlocks++;
    buf.fill(0);
    await extent.read(buf, 0, BLOCK_SIZE, map.phys[lba]! * BLOCK_SIZE);
    if (crc32(buf) >>> 0 !== map.crc[lba]) {
      map.damaged[lba] = 1;
      damaged.push({ lba, lsn: ckptLsn });
    }
  }
  return scrubbedBlocks;
}

/**
 * Once the mount goes on: inline redo into the extent, stale ring slots erased, extent synced, then
 * the sync mark written at `markLsn` (when given) and the ring synced.
 */
async function finishMount(
  g: VolumeGeometry,
  files: { extent: FileHandleLike; wal: FileHandleLike },
  redo: readonly { lba: number; block: Uint8Array }[],
  staleSlots: readonly number[],
  markLsn: number | undefined,
): Promise<void> {
  for (const { lba, block } of redo) await files.extent.write(block, 0, BLOCK_SIZE, lba * BLOCK_SIZE);
  if (staleSlots.length > 0) {
    const zero = new Uint8Array(g.walSlotSize);
    for (const s of staleSlots) await files.wal.write(zero, 0, zero.length, s * g.walSlotSize);
  }
  await files.extent.datasync();
  if (markLsn !== undefined) await writeSyncMark(files.wal, g, markLsn);
  await files.wal.datasync();
}

async function readRun(extent: FileHandleLike, offset: number, blocks: number): Promise<Uint8Array> {
  const buf = new Uint8Array(blocks * BLOCK_SIZE);
  await extent.read(buf, 0, buf.length, offset);
  return buf;
}
