import { isCustodyError } from "../../core/index.ts";
import { BLOCK_SIZE, decideRecovery, RecoveryDecision, VolumeErrorCode } from "../../volume/index.ts";
import type { SmartWalVolume, SnapshotBlock, WalEntry } from "../../volume/index.ts";
import type { CatchUpItem } from "./catch-up-seal.ts";

/** One WAL record to replay, or a piece of one larger than a chunk (`last` on its final piece). */
export interface RecordPiece {
  readonly lsn: number;
  readonly lba: number;
  readonly blockCount: number;
  readonly last: boolean;
}

/** What a catch-up session sends: the decision, then snapshot blocks, then WAL record pieces. */
export interface CatchUpPlan {
  readonly decision: RecoveryDecision;
  readonly reason: string;
  /** R, S, H as probed. */
  readonly replicaFlushedLsn: number;
  readonly walStart: number;
  readonly walHead: number;
  /** The snapshot's checkpoint LSN when blocks are sent. */
  readonly checkpointLsn?: number;
  /**
   * True when WAL catch-up was decided but the ring could not serve it (window moved, or a record unreadable), so a
   * delta was used.
   */
  readonly fellBackToDelta: boolean;
  readonly blocks: readonly SnapshotBlock[];
  readonly pieces: readonly RecordPiece[];
  readonly walRecords: number;
}

/**
 * The primary's side of the memo's rule (4.4) for a replica flushed through R: R ≥ S − 1 → WAL
 * catch-up (the records after R read back from the WAL ring, their data re-read from the extent
 * when sent); otherwise an extent delta — every LBA whose latest change in a fresh checkpoint is
 * after R, read under a checkpoint-consistent snapshot — then the WAL records after that
 * checkpoint; R = 0 outside the window, or R past the head, is a full copy. The ring and the
 * per-LBA change LSNs are on disk, so this works the same after the primary restarts. Records
 * longer than `maxPieceBlocks` are cut into pieces so every chunk stays bounded.
 */
export async function planCatchUp(vol: SmartWalVolume, R: number, maxPieceBlocks: number): Promise<CatchUpPlan> {
  const { start: S, head: H } = vol.walWindow();
  const d = decideRecovery({ replicaFlushedLsn: R, walStart: S, walHead: H });
  let entries: WalEntry[] | undefined;
  let fellBackToDelta = false;
  if (d.decision === RecoveryDecision.CatchUp) {
    entries = await vol.walRecordsAfter(R).catch((err: unknown) => {
      // A checkpoint moved the window after the probe, or a ring record is unreadable: the delta covers it.
      if (isCustodyError(err) && (err.code === VolumeErrorCode.BadRequest || err.code === VolumeErrorCode.WalDamaged))
        return undefined;
      throw err;
    });
    fellBackToDelta = entries === undefined;
  }
  let snap: { checkpointLsn: number; blocks: SnapshotBlock[] } | undefined;
  if (d.decision === RecoveryDecision.DeltaRebuild || d.decision === RecoveryDecision.FullRebuild || fellBackToDelta) {
    if (d.decision === RecoveryDecision.FullRebuild) {
      await vol.checkpoint();
      snap = await vol.readCheckpointConsistent(Array.from({ length: vol.geometry.blockCount }, (_, i) => i));
    } else {
      snap = await vol.readDeltaSince(R);
    }
    entries = await vol.walRecordsAfter(snap.checkpointLsn);
  }
  const pieces: RecordPiece[] = [];
  for (const e of entries ?? []) {
    for (let off = 0; off < e.blockCount; off += maxPieceBlocks) {
      const n = Math.min(maxPieceBlocks, e.blockCount - off);
      pieces.push({ lsn: e.lsn, lba: e.lba + off, blockCount: n, last: off + n === e.blockCount });
    }
  }
  return {
    decision: d.decision,
    reason: d.reason,
    replicaFlushedLsn: R,
    walStart: S,
    walHead: H,
    ...(snap !== undefined ? { checkpointLsn: snap.checkpointLsn } : {}),
    fellBackToDelta,
    blocks: snap?.blocks ?? [],
    pieces,
    walRecords: entries?.length ?? 0,
  };
}

/** Items in a plan. */
export function itemCount(plan: CatchUpPlan): number {
  return plan.blocks.length + plan.pieces.length;
}

/**
 * The items from `cursor` on that fit in `maxBytes` of data (at least one). A record's data is read
 * now: its current content (zeros once trimmed) — replaying every record after R in LSN order ends
 * at the primary's state.
 */
export async function readItems(
  vol: SmartWalVolume,
  plan: CatchUpPlan,
  cursor: number,
  maxBytes: number,
): Promise<CatchUpItem[]> {
  const out: CatchUpItem[] = [];
  let bytes = 0;
  for (let i = cursor; i < itemCount(plan); i++) {
    const b = plan.blocks[i];
    const size = b !== undefined ? BLOCK_SIZE : plan.pieces[i - plan.blocks.length]!.blockCount * BLOCK_SIZE;
    if (out.length > 0 && bytes + size > maxBytes) break;
    bytes += size;
    if (b !== undefined) {
      out.push({ kind: "block", lba: b.lba, data: b.data ?? new Uint8Array(BLOCK_SIZE) });
    } else {
      const p = plan.pieces[i - plan.blocks.length]!;
      out.push({ kind: "record", lsn: p.lsn, lba: p.lba, data: await vol.read(p.lba, p.blockCount), last: p.last });
    }
  }
  return out;
}
