import { decideRecovery, RecoveryDecision } from "../../volume/recovery-decision.ts";
import type { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import type { ShipLogEntry } from "../writer/writer-core.ts";
import type { ReplicaCore } from "./replica-core.ts";

/** The primary side of a reconnect: its volume and its WAL metadata (`WriterCore.walRecordsAfter`). */
export interface PrimaryView {
  readonly volume: SmartWalVolume;
  walRecordsAfter(lsn: number): ShipLogEntry[];
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
}

/**
 * Brings a reconnected replica to the primary's head by the memo's rule (4.4): R ≥ S − 1 → WAL
 * catch-up (replay the WAL records after R, data re-read from the extent); otherwise, when the
 * primary's dirty map for this replica covers R, an extent delta read under a checkpoint-consistent
 * snapshot, then WAL catch-up from that checkpoint; else a full copy. Ends with a replica barrier
 * and confirms the dirty map up to the replica's flushed LSN.
 */
export async function catchUpReplica(primary: PrimaryView, replica: ReplicaCore, peerId: string): Promise<CatchUpReport> {
  const R = replica.flushedLsn;
  const { start: S, head: H } = primary.volume.walWindow();
  const dirty = primary.volume.trackPeer(peerId);
  const d = decideRecovery({ replicaFlushedLsn: R, walStart: S, walHead: H, dirtyMapSince: dirty.since });
  let from = R;
  let deltaBlocks = 0;
  if (d.decision === RecoveryDecision.DeltaRebuild || d.decision === RecoveryDecision.FullRebuild) {
    const snap =
      d.decision === RecoveryDecision.DeltaRebuild
        ? await primary.volume.readDelta(peerId)
        : await (async () => {
            const lsn = await primary.volume.checkpoint();
            const all = Array.from({ length: primary.volume.geometry.blockCount }, (_, i) => i);
            return { ...(await primary.volume.readCheckpointConsistent(all)), checkpointLsn: lsn };
          })();
    await replica.applyBlocks(snap.blocks, snap.checkpointLsn);
    deltaBlocks = snap.blocks.length;
    from = snap.checkpointLsn;
  }
  let replayed = 0;
  if (d.decision !== RecoveryDecision.NoRecovery) {
    for (const e of primary.walRecordsAfter(from)) {
      const data = await primary.volume.read(e.lba, e.blocks);
      await replica.applyRecord(e.lsn, e.lba, data);
      replayed++;
    }
  }
  const flushed = await replica.barrier();
  dirty.confirm(flushed);
  return { decision: d.decision, reason: d.reason, replicaFlushedLsn: R, walStart: S, walHead: H, walRecordsReplayed: replayed, deltaBlocks, flushedLsn: flushed };
}
