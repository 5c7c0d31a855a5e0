import { CustodyError } from "../core/index.ts";
import type { CheckpointIssue } from "./checkpoint.ts";
import type { VolumeMode } from "./format.ts";
import type { LostRecord, ReplayStop } from "./ring-scan.ts";
import { VolumeErrorCode } from "./volume-errors.ts";

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
  /** Slots past the recovered end that held a record or garbage and were erased (0 when the mount was refused). */
  erasedTailRecords: number;
  /** Highest LSN known durable from the checkpoint and the records' durable watermarks. */
  durableProofLsn: number;
  /**
   * Highest LSN whose extent data a SyncCache made durable: the sync mark, the checkpoint LSN or
   * the durable proof, whichever is highest. Deferred-barrier writes past it may be cut.
   */
  extentCoveredLsn: number;
  /**
   * Deferred-barrier records past `extentCoveredLsn` cut because a write's data never reached the disk (it and all
   * later ones).
   */
  unsyncedCutRecords: number;
  /**
   * Ring positions inside the log whose record is unreadable (damage, not a torn tail). Their LBAs
   * cannot be known: without `acceptLoss` the mount is refused with WalDamagedError.
   */
  lostRecords: LostRecord[];
  /** True when lost records were accepted (`acceptLoss`) and the mount went on without them. */
  lossAccepted: boolean;
  /** LBAs whose data failed its CRC in this recovery (record data, or scrub). */
  damaged: DamagedEntry[];
  /** Every LBA flagged damaged after recovery, including those a checkpoint carried from earlier mounts. */
  knownDamaged: number[];
  /** Checkpoint-named blocks re-verified (scrub) and how many failed. */
  scrubbedBlocks: number;
  mappedBlocks: number;
}

/**
 * WAL records that were part of the log (durable, or followed by later records) are unreadable:
 * their LBAs cannot be named. At mount the volume is then not mounted unless the caller accepts
 * the loss (`acceptLoss`, `recover --accept-loss`); `report` is the full recovery report.
 */
export class WalDamagedError extends CustodyError {
  constructor(
    message: string,
    readonly lostLsns: readonly number[],
    readonly report?: RecoveryReport,
  ) {
    super(VolumeErrorCode.WalDamaged, message, { lostLsns, ...(report ? { report } : {}) });
  }
}
