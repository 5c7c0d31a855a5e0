import { CustodyError } from "../../core/index.ts";
import { GrowingRangeSet } from "../../lanes/index.ts";
import { RangeSet } from "../../lanes/index.ts";

/**
 * What one holder still owes for one lane, pure. It answers the holder's three decisions:
 * which units are still pinned for a downstream edge (forwarded but not receipted by THAT edge —
 * a publish completing is not a receipt), which ranges may be released (authorized by a release
 * frontier AND receipted by every edge), and what the persistence cut is (ranges a completed
 * fdatasync made disk-resident). Released ranges never come back.
 */

/** Why an edge receipt was refused; refused receipts change nothing. */
export const EdgeReceiptErrorCode = {
  NotAnEdge: "not_an_edge",
  StaleIncarnation: "stale_incarnation",
  StaleEpoch: "stale_epoch",
} as const;
export type EdgeReceiptErrorCode = (typeof EdgeReceiptErrorCode)[keyof typeof EdgeReceiptErrorCode];

/** A downstream receipt the holder refused (stale, or from a holder that is not this lane's edge). */
export class EdgeReceiptError extends CustodyError {
  constructor(code: EdgeReceiptErrorCode, message: string, detail: Record<string, unknown>) {
    super(code, message, detail);
  }
}

/** The fields of a verified downstream receipt that matter for pins. */
export interface EdgeReceipt {
  readonly holder: string;
  readonly incarnation: number;
  readonly epoch: number;
  readonly receiptSeq: number;
  /** Ranges the edge states it retains (at any residency). */
  readonly retained: RangeSet;
}

interface EdgeState {
  incarnation: number | undefined;
  lastReceiptSeq: number;
  receipted: RangeSet;
  /**
   * Ranges the control log released at this edge (any incarnation: a release frontier belongs to
   * the holder and never shrinks). The edge no longer owes custody of them, so they are not owed
   * to it either — even if no receipt of them ever arrived here before it let them go.
   */
  releasedThere: RangeSet;
  /** receipted ∪ releasedThere, kept current (pins consult it on every release check). */
  covered: RangeSet;
}

/** Recomputes what an edge needs nothing more of: its receipts, and what the control log released there. */
function refreshCovered(e: EdgeState): void {
  e.covered = e.releasedThere.isEmpty ? e.receipted : e.receipted.union(e.releasedThere);
}

/** Mutable per-lane obligation state of one holder. */
export class LaneObligations {
  private readonly retainedGrowing = new GrowingRangeSet();
  private releasedSet = RangeSet.EMPTY;
  private frontier = RangeSet.EMPTY;
  private disk = RangeSet.EMPTY;
  private readonly edges = new Map<string, EdgeState>();
  private minEpoch: number;

  constructor(edges: readonly string[], epoch = 0) {
    for (const e of edges)
      this.edges.set(e, {
        incarnation: undefined,
        lastReceiptSeq: -1,
        receipted: RangeSet.EMPTY,
        releasedThere: RangeSet.EMPTY,
        covered: RangeSet.EMPTY,
      });
    this.minEpoch = epoch;
  }

  /** Sequences held now (admitted, not released). */
  get retained(): RangeSet {
    return this.retainedGrowing.value;
  }

  /** Sequences released locally; they can never be retained again. */
  get released(): RangeSet {
    return this.releasedSet;
  }

  /** The persistence cut: sequences whose bytes a completed fdatasync made disk-resident. */
  get diskResident(): RangeSet {
    const retained = this.retained;
    const c = this.residentCut;
    if (c !== undefined && c.disk === this.disk && c.retained === retained) return c.value;
    const value = this.disk.intersect(retained);
    this.residentCut = { disk: this.disk, retained, value };
    return value;
  }

  /** The last persistence cut and the (immutable) sets it was cut from: asked far more often than they change. */
  private residentCut: { disk: RangeSet; retained: RangeSet; value: RangeSet } | undefined;

  /** Downstream edges of this lane. */
  get edgeIds(): string[] {
    return [...this.edges.keys()];
  }

  /** Records admitted sequences. Returns false (no change) for a range already released. */
  admit(first: number, last: number): boolean {
    if (this.releasedSet.overlaps(first, last)) return false;
    this.retainedGrowing.add(first, last);
    return true;
  }

  /**
   * Applies a verified downstream receipt. A receipt from a holder that is not an edge, from an
   * older incarnation, or prepared under an older epoch throws EdgeReceiptError and changes
   * nothing. A newer incarnation means the edge restarted and lost its RAM: everything it receipted
   * before is pinned again. Duplicated and reordered receipts of the current incarnation only add
   * coverage the edge really stated, so they are harmless. Returns true when the receipt revealed
   * a restart (a newer incarnation than the one known): what was sent before no longer counts.
   */
  applyEdgeReceipt(r: EdgeReceipt): boolean {
    const e = this.edges.get(r.holder);
    if (e === undefined)
      throw new EdgeReceiptError(EdgeReceiptErrorCode.NotAnEdge, `${r.holder} is not a downstream edge of this lane`, {
        holder: r.holder,
      });
    if (r.epoch < this.minEpoch) {
      throw new EdgeReceiptError(
        EdgeReceiptErrorCode.StaleEpoch,
        `receipt from ${r.holder} is from epoch ${r.epoch} < ${this.minEpoch}`,
        { holder: r.holder, epoch: r.epoch },
      );
    }
    if (e.incarnation !== undefined && r.incarnation < e.incarnation) {
      throw new EdgeReceiptError(
        EdgeReceiptErrorCode.StaleIncarnation,
        `receipt from ${r.holder} incarnation ${r.incarnation} < ${e.incarnation}`,
        {
          holder: r.holder,
          incarnation: r.incarnation,
          current: e.incarnation,
        },
      );
    }
    let restarted = false;
    if (e.incarnation === undefined || r.incarnation > e.incarnation) {
      restarted = e.incarnation !== undefined;
      e.incarnation = r.incarnation;
      e.lastReceiptSeq = -1;
      e.receipted = RangeSet.EMPTY;
    }
    e.lastReceiptSeq = Math.max(e.lastReceiptSeq, r.receiptSeq);
    e.receipted = e.receipted.union(r.retained);
    refreshCovered(e);
    return restarted;
  }

  /**
   * The edge restarted as `incarnation` (its credit grants say so): it lost what it held in RAM,
   * so nothing it receipted before counts any more and every retained unit is pending for it
   * again. An older or equal incarnation changes nothing.
   */
  restartEdge(edge: string, incarnation: number): void {
    const e = this.edges.get(edge);
    if (e === undefined || (e.incarnation !== undefined && incarnation <= e.incarnation)) return;
    e.incarnation = incarnation;
    e.lastReceiptSeq = -1;
    e.receipted = RangeSet.EMPTY;
    refreshCovered(e);
  }

  /**
   * Sequences `edge` needs nothing more of: receipted by its current incarnation, or released
   * there by the control log — whether still retained here or not.
   */
  receiptedBy(edge: string): RangeSet {
    const e = this.edges.get(edge);
    return e === undefined ? RangeSet.EMPTY : e.covered;
  }

  /**
   * The control log released `ranges` at `edge` (its release frontier). Returns true when that
   * covered anything new; a holder that is not an edge changes nothing.
   */
  releasedAtEdge(edge: string, ranges: RangeSet): boolean {
    const e = this.edges.get(edge);
    if (e === undefined || e.releasedThere.coversAll(ranges)) return false;
    e.releasedThere = e.releasedThere.union(ranges);
    refreshCovered(e);
    return true;
  }

  /** Raises the epoch below which edge receipts are stale (from the control log). */
  fenceEpoch(epoch: number): void {
    this.minEpoch = Math.max(this.minEpoch, epoch);
  }

  /** Sequences retained here that `edge` has not receipted yet (still pinned for it). */
  pendingFor(edge: string): RangeSet {
    const e = this.edges.get(edge);
    return e === undefined ? RangeSet.EMPTY : this.retained.subtract(e.covered);
  }

  /**
   * Sequences pending for `edge` below the highest sequence it has receipted: units are forwarded
   * and receipted in order, so these were lost on the way (or the edge dropped them), not in flight.
   */
  holesAt(edge: string): RangeSet {
    const e = this.edges.get(edge);
    const top = e?.receipted.max;
    if (e === undefined || top === undefined) return RangeSet.EMPTY;
    return this.retained.subtract(e.covered).intersect(RangeSet.of(0, top));
  }

  /** True when every edge has receipted all of `seqs` (always true for a terminal holder). */
  forwardedToAll(seqs: RangeSet): boolean {
    for (const e of this.edges.values()) if (!e.covered.coversAll(seqs)) return false;
    return true;
  }

  /** Adds ranges a release frontier authorizes (monotonic: a frontier never shrinks). */
  authorizeRelease(ranges: RangeSet): void {
    this.frontier = this.frontier.union(ranges);
  }

  /** Retained sequences that may be released now: authorized by the frontier and receipted by every edge. */
  releasable(): RangeSet {
    let r = this.retained.intersect(this.frontier);
    for (const e of this.edges.values()) r = r.intersect(e.covered);
    return r;
  }

  /** True when the whole of `seqs` may be released (a whole segment can then be recycled). */
  canRelease(seqs: RangeSet): boolean {
    return this.releasable().coversAll(seqs);
  }

  /**
   * Releases `seqs` (must be releasable: otherwise nothing changes and false is returned).
   * Released sequences leave the retained set and the persistence cut, and never come back.
   */
  release(seqs: RangeSet): boolean {
    if (!this.canRelease(seqs)) return false;
    this.retainedGrowing.set(this.retained.subtract(seqs));
    this.releasedSet = this.releasedSet.union(seqs);
    this.disk = this.disk.subtract(seqs);
    return true;
  }

  /**
   * Gives up custody of `seqs` after a neighbor's receipt covers them (custody transfer). Unlike
   * `release`, no frontier is needed: the neighbor now holds the same obligation. Returns false
   * (no change) unless `neighborReceipted` covers `seqs`.
   */
  transferOut(seqs: RangeSet, neighborReceipted: RangeSet): boolean {
    if (!neighborReceipted.coversAll(seqs)) return false;
    this.retainedGrowing.set(this.retained.subtract(seqs));
    this.releasedSet = this.releasedSet.union(seqs);
    this.disk = this.disk.subtract(seqs);
    return true;
  }

  /** Records persistence evidence: only call with the ranges of a COMPLETED fdatasync. */
  persisted(seqs: RangeSet): void {
    this.disk = this.disk.union(seqs.intersect(this.retained));
  }
}
