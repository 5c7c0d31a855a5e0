import { isCustodyError } from "../../core/index.ts";
import { decideRecovery, RecoveryDecision } from "../../volume/index.ts";
import type { SmartWalVolume, SnapshotBlock, WalEntry } from "../../volume/index.ts";
import { VolumeErrorCode } from "../../volume/index.ts";
import type { ReplicaCore } from "./replica-core.ts";

/** The primary side of a reconnect: its volume (WAL window read from the ring, extent, checkpoints). */
export interface PrimaryView {
  readonly volume: SmartWalVolume;
}

/** What a catch-up did. */
export interface CatchUpReport {
  readonly decision: RecoveryDecision;
  readonly reason: string;
  /** R, S, H as probed. */
  readonly replicaFlushedLsn: number;
  readonly walStart: number;
  readonly walHead: number;
  readonly walRecordsReplayed: number;
  readonly deltaBlocks: number;
  readonly flushedLsn: number;
  /** True when WAL catch-up was decided but the ring could not serve it (window moved, or a record unreadable), so a delta was used. */
  readonly fellBackToDelta: boolean;
}

/**
 * Brings a reconnected replica to the primary's head by the memo's rule (4.4): R ≥ S − 1 → WAL
 * catch-up (the records after R are read back from the primary's WAL ring, data re-read from the
 * extent); otherwise an extent delta — every LBA whose latest change in a fresh checkpoint is after
 * R, read under a checkpoint-consistent snapshot — then WAL catch-up from that checkpoint; R = 0
 * outside the window is a full copy. The ring and the per-LBA change LSNs are on disk, so this
 * works the same after the primary restarts. Ends with a replica barrier.
 */
export async function catchUpReplica(primary: PrimaryView, replica: ReplicaCore): Promise<CatchUpReport> {
  const vol = primary.volume;
  const R = replica.flushedLsn;
  const { start: S, head: H } = vol.walWindow();
  const d = decideRecovery({ replicaFlushedLsn: R, walStart: S, walHead: H });
  let from = R;
  let deltaBlocks = 0;
  let entries: WalEntry[] | undefined;
  let fellBackToDelta = false;
  if (d.decision === RecoveryDecision.CatchUp) {
    entries = await vol.walRecordsAfter(R).catch((err: unknown) => {
      // A checkpoint moved the window after the probe, or a ring record is unreadable: the delta covers it.
      if (isCustodyError(err) && (err.code === VolumeErrorCode.BadRequest || err.code === VolumeErrorCode.WalDamaged)) return undefined;
      throw err;
    });
    fellBackToDelta = entries === undefined;
  }
  const needsSnapshot = d.decision === RecoveryDecision.DeltaRebuild || d.decision === RecoveryDecision.FullRebuild || fellBackToDelta;
  if (needsSnapshot) {
    const snap: { checkpointLsn: number; blocks: SnapshotBlock[] } =
      d.decision === RecoveryDecision.FullRebuild
        ? await (async () => {
            await vol.checkpoint();
            return vol.readCheckpointConsistent(Array.from({ length: vol.geometry.blockCount }, (_, i) => i));
          })()
        : await vol.readDeltaSince(R);
    await replica.applyBlocks(snap.blocks, snap.checkpointLsn);
    deltaBlocks = snap.blocks.length;
    from = snap.checkpointLsn;
    entries = await vol.walRecordsAfter(from);
  }
  let replayed = 0;
  for (const e of entries ?? []) {
    // Current data of the range (zeros once trimmed): replaying every record after R in LSN order ends at the primary's state.
    const data = await vol.read(e.lba, e.blockCount);
    await replica.applyRecord(e.lsn, e.lba, data);
    replayed++;
  }
  const flushed = await replica.barrier();
  return { decision: d.decision, reason: d.reason, replicaFlushedLsn: R, walStart: S, walHead: H, walRecordsReplayed: replayed, deltaBlocks, flushedLsn: flushed, fellBackToDelta };
}
