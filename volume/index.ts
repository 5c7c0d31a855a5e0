/** Public surface of the SmartWAL volume store. */
export {
  SmartWalVolume,
  type ExtentBarrier,
  type OpenVolumeOptions,
  type VolumeStats,
  type SnapshotBlock,
  type WalEntry,
} from "./smartwal-volume.ts";
export { type CreateRun, type CreateVolumeOptions, DEFAULT_LAYOUT, geometryFor } from "./volume-files.ts";
export { copyVolumeFiles } from "./volume-copy.ts";
export {
  discardStagedVolume,
  openStagedVolume,
  PARTIAL_SUFFIX,
  sealStagedVolume,
  STAGED_FILE_MODE,
  stageVolume,
  stagedFileLayer,
} from "./staged-volume.ts";
export {
  BLOCK_SIZE,
  RECORD_SIZE,
  VolumeLayout,
  VolumeMode,
  VolumeFiles,
  defaultSpareBlocks,
  defaultWalCapacity,
  maxWriteBlocks,
  slotSizeFor,
  decodeHeader,
  type VolumeGeometry,
} from "./format.ts";
export { type RecoveryReport, type DamagedEntry, type LostRecord, ReplayStop } from "./recovery.ts";
export { DirtyMap } from "./dirty-map.ts";
export { decideRecovery, RecoveryDecision, type RecoveryInputs } from "./recovery-decision.ts";
export { RecoverabilityClass, classifyLsn, type DurabilityProof } from "./recoverability.ts";
export { encodeRecord, decodeRecord, RecordFlag, RecordProblem, type WalRecord } from "./wal-record.ts";
export { decodeCheckpoint, type Checkpoint } from "./checkpoint.ts";
export {
  VolumeErrorCode,
  HeaderCorruptError,
  FileSizeError,
  CheckpointCorruptError,
  DamagedBlockError,
  BadRequestError,
  NoSpaceError,
  VolumeClosedError,
  VolumeExistsError,
  VolumeNotFoundError,
} from "./volume-errors.ts";
export { WalDamagedError } from "./recovery-report.ts";
export { inspectVolume, type VolumeInspection } from "./inspect.ts";
