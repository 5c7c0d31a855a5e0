/**
 * How a durable write can be recovered (memo section 9), as the engine sees it without knowing
 * the write encoding: `inline` — the WAL record carries the data; `extent_referenced` — the WAL
 * record points at CRC-checked data in the extent (SmartWAL); `snapshot_based` — the write is
 * folded into a checkpoint snapshot and no longer needs its WAL record.
 */
export const RecoverabilityClass = {
  Inline: "inline",
  ExtentReferenced: "extent_referenced",
  SnapshotBased: "snapshot_based",
} as const;
/** One of the RecoverabilityClass values. */
export type RecoverabilityClass = (typeof RecoverabilityClass)[keyof typeof RecoverabilityClass];

/**
 * What a completed syncCache() proves: every write with LSN ≤ `durableLsn` is data-durable
 * (extent barrier, or payload in the WAL) and metadata-durable (WAL fsync), in `epoch`.
 */
export interface DurabilityProof {
  durableLsn: number;
  epoch: number;
  /** LSN folded into the durable checkpoint: writes ≤ it are snapshot_based. */
  checkpointLsn: number;
  /** How writes in (checkpointLsn, durableLsn] are recoverable. */
  recoverability: RecoverabilityClass;
  /**
   * The barriers behind the proof, in order (`shared_fdatasync`: one-file layout, one fdatasync for extent and WAL).
   */
  barriers: readonly ("extent_fdatasync" | "wal_fsync" | "shared_fdatasync")[];
}

/** Class of the write with `lsn` given the volume's mode and checkpoint LSN. */
export function classifyLsn(lsn: number, checkpointLsn: number, inline: boolean): RecoverabilityClass {
  if (lsn <= checkpointLsn) return RecoverabilityClass.SnapshotBased;
  return inline ? RecoverabilityClass.Inline : RecoverabilityClass.ExtentReferenced;
}
