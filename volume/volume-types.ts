import type { Clock } from "../core/index.ts";
import type { Counters } from "../core/index.ts";
import type { FileLayer } from "../core/index.ts";
import type { RecordFlag } from "./wal-record.ts";

/**
 * When SmartWAL takes its extent barrier (fdatasync of the extent). `per-batch`: before each
 * group's records are appended, so every record on disk names durable data. `sync-cache`: only at
 * SyncCache, at a checkpoint and when the ring or spare needs room; records carry a flag and
 * recovery ends the log at the first one past the sync mark whose data did not reach the disk.
 */
export type ExtentBarrier = "per-batch" | "sync-cache";

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
  /**
   * Mount even when recovery finds unreadable records inside the log, dropping them (default false: WalDamagedError).
   */
  acceptLoss?: boolean;
  /** SmartWAL: when the extent barrier is taken (default `sync-cache`; see ExtentBarrier). Ignored in inline mode. */
  extentBarrier?: ExtentBarrier;
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
  /** pwrite calls to the extent (a group commit's coalesced data runs, an inline flush's blocks). */
  extentWrites: number;
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
