import type { ConsistencyCut } from "../../custody/index.ts";
import type { RangeSet } from "../../lanes/index.ts";
import { encodeMessage } from "../../transport/protocol/index.ts";
import { laneManifestSpec, type LaneManifestMessage } from "../../transport/protocol/index.ts";

/** Most manifests one lane keeps; beyond it the most closely spaced older one is dropped. */
export const KEPT_MANIFESTS_MAX = 64;
/** Most cut entries one receipt lists (the receipt codec's limit). */
const RECEIPT_CUT_ENTRIES_MAX = 256;

/** A consistency manifest a holder keeps beside the lane range it covers. */
export interface KeptManifest {
  readonly lsn: number;
  readonly term: number;
  /** [lane, seq] of every lane the manifest names, lanes ascending. */
  readonly cut: readonly (readonly [string, number])[];
  /** This holder's lane's sequence in the cut: the manifest is kept while that sequence is. */
  readonly seq: number;
}

/**
 * The manifests one holder lane keeps. Bounded: only manifests whose sequence of this lane is
 * still retained or has not arrived yet, at most {@link KEPT_MANIFESTS_MAX}; one whose sequence was
 * released (or fell into a hole) goes with it. Memory only: a restarted holder lists none until
 * the writer's next manifests arrive (docs/holder.md#consistency-manifests).
 */
export class LaneManifests {
  private kept: KeptManifest[] = [];

  constructor(private readonly lane: string) {}

  /** The kept manifests, oldest first. */
  entries(): readonly KeptManifest[] {
    return this.kept;
  }

  /** Keeps `m` (ordered by LSN); false when it names no sequence of this lane or is already kept. */
  add(m: Omit<KeptManifest, "seq">): boolean {
    const mine = m.cut.find(([l]) => l === this.lane);
    if (mine === undefined) return false;
    const at = this.kept.findIndex((k) => k.lsn >= m.lsn);
    if (at >= 0 && this.kept[at]!.lsn === m.lsn && this.kept[at]!.term >= m.term) return false;
    const entry: KeptManifest = { ...m, seq: mine[1] };
    if (at < 0) this.kept.push(entry);
    else if (this.kept[at]!.lsn === m.lsn) this.kept[at] = entry;
    else this.kept.splice(at, 0, entry);
    if (this.kept.length > KEPT_MANIFESTS_MAX) this.thin();
    return true;
  }

  /** Forgets manifests whose sequence of this lane is gone: released, or a hole below what is retained. */
  prune(retained: RangeSet): void {
    const max = retained.max;
    if (max === undefined) return;
    this.kept = this.kept.filter((k) => k.seq > max || retained.has(k.seq));
  }

  /**
   * The kept manifests whose sequence of this lane lies in `ranges` (what one receipt states), as
   * receipt consistency cuts: newest first, each a run of its lanes in ascending order, as many as
   * fit a receipt.
   */
  cutsWithin(volume: string, ranges: RangeSet): ConsistencyCut[] {
    const out: ConsistencyCut[] = [];
    for (let i = this.kept.length - 1; i >= 0; i--) {
      const k = this.kept[i]!;
      if (!ranges.has(k.seq)) continue;
      if (out.length + k.cut.length > RECEIPT_CUT_ENTRIES_MAX) break;
      for (const [lane, throughSeq] of k.cut) out.push({ volume, lane, throughSeq });
    }
    return out;
  }

  /** Drops the kept manifest (never the newest nor the oldest) whose neighbours are closest in LSN. */
  private thin(): void {
    let drop = 1;
    let gap = Infinity;
    for (let i = 1; i < this.kept.length - 1; i++) {
      const g = this.kept[i + 1]!.lsn - this.kept[i - 1]!.lsn;
      if (g < gap) [drop, gap] = [i, g];
    }
    this.kept.splice(drop, 1);
  }
}

/** Encodes a manifest for sending (the writer's side). */
export function encodeManifest(m: LaneManifestMessage): Uint8Array {
  return encodeMessage(laneManifestSpec, m);
}
