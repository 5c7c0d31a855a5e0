import { crc32 } from "node:zlib";
import type { FileHandleLike } from "../core/file-layer.ts";
import { BlockMap, UNMAPPED } from "./block-map.ts";
import type { Checkpoint, CheckpointIssue } from "./checkpoint.ts";
import { BLOCK_SIZE, VolumeMode, type VolumeGeometry } from "./format.ts";
import { decodeRecord, RecordFlag, type WalRecord } from "./wal-record.ts";

/** Why replay stopped. `end` means every slot after the checkpoint was read (the ring was full). */
export const ReplayStop = {
  Empty: "empty",
  BadCrc: "bad_crc",
  BadMagic: "bad_magic",
  BadField: "bad_field",
  LsnGap: "lsn_gap",
  End: "end",
} as const;
/** One of the ReplayStop values. */
export type ReplayStop = (typeof ReplayStop)[keyof typeof ReplayStop];

/** One LBA whose data failed its CRC during recovery. */
export interface DamagedEntry {
  lba: number;
  lsn: number;
}

/** What recovery found; printed by `custody volume recover` and returned by `SmartWalVolume.open`. */
export interface RecoveryReport {
  mode: VolumeMode;
  checkpoint: { slot: number; sequence: number; lsn: number };
  checkpointIssues: CheckpointIssue[];
  replayedRecords: number;
  /** Last LSN recovered (checkpoint LSN when nothing was replayed); nextLsn = lastLsn + 1. */
  lastLsn: number;
  nextLsn: number;
  stopReason: ReplayStop;
  /** Slot where replay stopped and, for a gap, the LSN found there. */
  stopDetail: { slot: number; foundLsn?: number };
  /** Records past the recovered end that had a valid CRC (unacknowledged or orphaned) and were erased. */
  erasedTailRecords: number;
  damaged: DamagedEntry[];
  /** Checkpoint-named blocks re-verified (scrub) and how many failed. */
  scrubbedBlocks: number;
  mappedBlocks: number;
}

/** The rebuilt in-memory state handed to the volume. */
export interface RecoveredState {
  map: BlockMap;
  lastLsn: number;
  report: RecoveryReport;
}

const CHUNK_SLOTS = 4096;

/**
 * Replays the WAL ring from checkpoint `ckpt`: takes records while each has a valid CRC and the
 * next LSN (I2, I3) and fits the geometry, then verifies the data of every record that still owns
 * an LBA against its CRC (I5: a mismatch marks the LBA damaged, never silent wrong data). Records
 * superseded within the replay are not verified: their blocks may legitimately have been reused.
 * Inline mode redoes each surviving payload into the extent. Valid-looking records past the
 * recovered end are erased so a later append can never be followed by a stale record from before
 * the crash. Ends with fdatasync of extent and ring. Throws only on I/O errors.
 */
export async function recover(
  g: VolumeGeometry,
  ckpt: Checkpoint,
  ckptSlot: number,
  checkpointIssues: CheckpointIssue[],
  files: { extent: FileHandleLike; wal: FileHandleLike },
  opts: { scrub?: boolean } = {},
): Promise<RecoveredState> {
  const map = ckpt.map.clone();
  const records: WalRecord[] = [];
  const cap = g.walCapacity;
  let expected = ckpt.lsn + 1;
  let stopReason: ReplayStop = ReplayStop.End;
  let stopDetail: RecoveryReport["stopDetail"] = { slot: (expected - 1) % cap };
  const tail: number[] = [];
  // Read the whole ring once, chunk by chunk, starting at the checkpoint's slot.
  let stopped = false;
  for (let i = 0, n = 0; i < cap; i += n) {
    const startSlot = (ckpt.ringStartSlot + i) % cap;
    n = Math.min(CHUNK_SLOTS, cap - i, cap - startSlot);
    const buf = new Uint8Array(n * g.walSlotSize);
    await files.wal.read(buf, 0, buf.length, startSlot * g.walSlotSize);
    for (let k = 0; k < n; k++) {
      const slot = startSlot + k;
      const decoded = decodeRecord(buf.subarray(k * g.walSlotSize, (k + 1) * g.walSlotSize));
      if (stopped) {
        if (typeof decoded !== "string" && decoded.lsn >= expected) tail.push(slot);
        continue;
      }
      const problem = typeof decoded === "string" ? decoded : recordProblem(decoded, expected, g);
      if (problem) {
        stopped = true;
        stopReason = problem;
        stopDetail = { slot, ...(typeof decoded !== "string" ? { foundLsn: decoded.lsn } : {}) };
        if (typeof decoded !== "string" && decoded.lsn >= expected) tail.push(slot);
        continue;
      }
      records.push(decoded as WalRecord);
      expected++;
    }
  }

  // Apply in LSN order; remember which record owns each LBA at the end.
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

  const damaged: DamagedEntry[] = [];
  const verified = new Set<number>();
  for (let lba = 0; lba < g.blockCount; lba++) {
    const idx = owner[lba]!;
    if (idx < 0 || verified.has(idx)) continue;
    verified.add(idx);
    const r = records[idx]!;
    const data = g.mode === VolumeMode.Inline ? r.payload! : await readRun(files.extent, r.physicalOffset, r.blockCount);
    const ok = (crc32(data) >>> 0) === r.dataCrc;
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
      if (g.mode === VolumeMode.Inline) await files.extent.write(block, 0, BLOCK_SIZE, l * BLOCK_SIZE);
    }
  }

  let scrubbedBlocks = 0;
  if (opts.scrub) {
    const buf = new Uint8Array(BLOCK_SIZE);
    for (let lba = 0; lba < g.blockCount; lba++) {
      if (owner[lba]! >= 0 || map.phys[lba] === UNMAPPED || map.damaged[lba]) continue;
      scrubbedBlocks++;
      buf.fill(0);
      await files.extent.read(buf, 0, BLOCK_SIZE, map.phys[lba]! * BLOCK_SIZE);
      if ((crc32(buf) >>> 0) !== map.crc[lba]) {
        map.damaged[lba] = 1;
        damaged.push({ lba, lsn: ckpt.lsn });
      }
    }
  }

  if (tail.length > 0) {
    const zero = new Uint8Array(g.walSlotSize);
    for (const s of tail) await files.wal.write(zero, 0, zero.length, s * g.walSlotSize);
  }
  await files.extent.datasync();
  await files.wal.datasync();

  const lastLsn = expected - 1;
  damaged.sort((a, b) => a.lba - b.lba);
  return {
    map,
    lastLsn,
    report: {
      mode: g.mode,
      checkpoint: { slot: ckptSlot, sequence: ckpt.sequence, lsn: ckpt.lsn },
      checkpointIssues,
      replayedRecords: records.length,
      lastLsn,
      nextLsn: lastLsn + 1,
      stopReason,
      stopDetail,
      erasedTailRecords: tail.length,
      damaged,
      scrubbedBlocks,
      mappedBlocks: map.mappedCount(),
    },
  };
}

/** Why a CRC-valid record still ends replay: wrong LSN, or fields outside the geometry. */
function recordProblem(r: WalRecord, expected: number, g: VolumeGeometry): ReplayStop | undefined {
  if (r.lsn !== expected) return ReplayStop.LsnGap;
  if (r.epoch > g.epoch) return ReplayStop.BadField;
  if (r.lba + r.blockCount > g.blockCount) return ReplayStop.BadField;
  if (r.flag === RecordFlag.Trim) return r.payload ? ReplayStop.BadField : undefined;
  // Write records describe exactly one block, so each block is verified by its own CRC.
  if (r.blockCount !== 1) return ReplayStop.BadField;
  if (g.mode === VolumeMode.Inline) {
    return r.payload && r.payload.length === r.blockCount * BLOCK_SIZE ? undefined : ReplayStop.BadField;
  }
  if (r.payload || r.physicalOffset % BLOCK_SIZE !== 0) return ReplayStop.BadField;
  if (r.physicalOffset / BLOCK_SIZE + r.blockCount > g.physicalBlocks) return ReplayStop.BadField;
  return undefined;
}

async function readRun(extent: FileHandleLike, offset: number, blocks: number): Promise<Uint8Array> {
  const buf = new Uint8Array(blocks * BLOCK_SIZE);
  await extent.read(buf, 0, buf.length, offset);
  return buf;
}
