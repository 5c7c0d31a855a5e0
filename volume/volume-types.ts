import type { Clock } from "../core/index.ts";
import type { Counters } from "../core/index.ts";
import type { FileLayer } from "../core/index.ts";
import type { RecordFlag } from "./wal-record.ts";

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
