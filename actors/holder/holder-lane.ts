import type { Clock } from "../../core/index.ts";
import { Arena } from "../../arena/index.ts";
import { PinReason } from "../../arena/index.ts";
import { Residency } from "../../arena/index.ts";
import { SegmentState } from "../../arena/index.ts";
import type { SpillEvidence } from "../../arena/index.ts";
import type { SpillSet } from "../../arena/index.ts";
import { decodeSegment } from "../../arena/index.ts";
import type { Counters } from "../../core/index.ts";
import { LaneLog } from "../../lanes/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { SendLog } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { CreditGrantor } from "../../transport/index.ts";
import type { CreditSender } from "../../transport/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { HolderConfig } from "./holder-config.ts";
import { LaneObligations } from "./lane-obligations.ts";

/**
 * One lane served by a holder: its own arena (one arena per lane, so a lane's memory bound and
 * credits never depend on another lane's traffic), acceptance log, obligations, credit grantor for
 * its upstream senders and one credit sender per downstream edge. Segment pins mirror the
 * obligations: `custody_obligation` until a release frontier and every edge's receipt cover the
 * whole segment, `in_flight_forward` (one per edge) until that edge's receipt covers it.
 */
export class HolderLane {
  readonly volume: string;
  readonly lane: string;
  readonly arena: Arena;
  readonly log: LaneLog;
  readonly obligations: LaneObligations;
  readonly grantor: CreditGrantor;
  readonly edges = new Map<string, CreditSender>();
  /** Segment id -> edges still holding an in_flight_forward pin on it. */
  private readonly forwardPins = new Map<number, Set<string>>();
  /** The newest base snapshot materialized beside this holder for this lane (named in its receipts). */
  base: { snapshotId: string; throughSeq: number; bytes: number } | undefined;
  /** Sequences last receipted at protected-RAM residency (what an evacuation must save). */
  protectedClaimed = RangeSet.EMPTY;
  /** Next receipt sequence of this holder incarnation on this stream. */
  receiptSeq = 1;
  /** Per edge: when each unreceipted range was last sent (gap repair, see edge-repair.ts). */
  readonly sendLogs = new Map<string, SendLog>();
  /** Per edge: re-send backoff factor (see edge-repair.ts). */
  readonly resendBackoff = new Map<string, number>();
  /** Ranges offered to the transfer neighbor and not yet covered by its receipt. */
  inTransfer = RangeSet.EMPTY;

  constructor(
    cfg: { volume: string; lane: string; upstream: readonly string[]; downstream: readonly string[] },
    holder: HolderConfig,
    transport: Transport,
    clock: Clock,
    counters: Counters,
  ) {
    this.volume = cfg.volume;
    this.lane = cfg.lane;
    const seg = holder.arena.segmentBytes;
    // The arena wants whole segments; round the configured limit down to one (at least 4 segments).
    const limit = Math.max(4 * seg, Math.floor(holder.arena.limitBytes / seg) * seg);
    const step = Math.max(seg, Math.floor((holder.arena.incrementBytes ?? limit) / seg) * seg);
    this.arena = new Arena(
      {
        segmentBytes: seg,
        // Capacity is secured in increments (see `grantSpace`), never all up front.
        initialBytes: Math.min(limit, Math.max(4 * seg, step)),
        incrementBytes: step,
        hardLimitBytes: limit,
        maxUnitBytes: holder.arena.maxUnitBytes,
        manifestReserveBytes: seg,
        maxOpenDelayMs: holder.arena.maxOpenDelayMs,
        growthLowWaterBytes: seg,
      },
      clock,
      counters,
    );
    this.log = new LaneLog(cfg.volume, cfg.lane);
    this.obligations = new LaneObligations(cfg.downstream, holder.epoch);
    this.grantor = new CreditGrantor({
      transport,
      holder: holder.holderId,
      incarnation: holder.incarnation,
      volume: cfg.volume,
      lane: cfg.lane,
      senders: cfg.upstream,
      space: { grant: (n) => this.grantSpace(n) },
      maxOutstanding: holder.arena.maxOutstandingCredit,
    });
  }

  /**
   * Promises up to `n` bytes of ingress credit. Before unpromised space runs low the next capacity
   * increment is secured (up to the configured limit); past the limit credits are simply withheld.
   */
  grantSpace(n: number): number {
    // Never promise what the protected-RAM bound would not admit (the holder's whole RAM queue).
    const want = Math.min(n, this.creditCap());
    if (want <= 0) return 0;
    if (this.arena.wantsIncrement()) this.arena.secureIncrement();
    return this.arena.grant(this.volume, this.lane, want);
  }

  /** Bytes this lane may still promise as credit (the holder sets it; unlimited by default). */
  creditCap: () => number = () => Infinity;

  /** Returns unused credit bytes to the pool (units lost on the wire or refused after crediting). */
  forfeit(bytes: number): void {
    if (bytes <= 0) return;
    const had = this.arena.revoke(this.volume, this.lane);
    const keep = Math.max(0, had - bytes);
    if (keep > 0) this.arena.grant(this.volume, this.lane, keep);
  }

  /**
   * Stores a validated, credited, new unit: arena append, acceptance, obligations, and one
   * in_flight_forward pin per edge on a freshly opened segment. Returns true when the unit opened
   * a new segment (the caller starts that segment's max-open-delay timer).
   */
  store(u: TransportUnit): boolean {
    const r = this.arena.append(u);
    this.log.record(u);
    this.obligations.admit(u.firstSeq, u.lastSeq);
    if (r.opened && this.edges.size > 0) {
      for (let i = 0; i < this.edges.size; i++) this.arena.pin(r.segmentId, PinReason.in_flight_forward);
      this.forwardPins.set(r.segmentId, new Set(this.edges.keys()));
    }
    return r.opened;
  }

  /** Seals the open segment (max open delay, or to release/spill/transfer a quiet lane). */
  seal(): void {
    this.arena.seal(this.volume, this.lane);
  }

  /** Sealed segments with their sequences, oldest first. */
  sealedSegments(): { id: number; seqs: RangeSet; residency: string; hasForwardPins: boolean }[] {
    const out = [];
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const s = this.arena.describe(id);
      if (s.state !== SegmentState.sealed) continue;
      out.push({ id, seqs: s.seqs(), residency: s.residency, hasForwardPins: this.forwardPins.has(id) });
    }
    return out;
  }

  /** Drops in_flight_forward pins of sealed segments every edge-specific receipt now covers. */
  unpinForwarded(): void {
    for (const [id, edges] of this.forwardPins) {
      const s = this.arena.describe(id);
      if (s.state !== SegmentState.sealed) continue;
      const seqs = s.seqs();
      for (const e of [...edges]) {
        if (this.obligations.pendingFor(e).intersects(seqs)) continue;
        edges.delete(e);
        if (edges.size === 0) this.forwardPins.delete(id);
        this.arena.unpin(id, PinReason.in_flight_forward);
      }
    }
  }

  /**
   * Releases every sealed segment the obligations allow (frontier + every edge's receipt). Returns
   * the released sequences. Whole segments only, decided from metadata: no byte is written.
   */
  releaseAllowed(): RangeSet {
    this.unpinForwarded();
    let released = RangeSet.EMPTY;
    const releasable = this.obligations.releasable();
    if (releasable.isEmpty) return released;
    for (const s of this.sealedSegments()) {
      if (s.seqs.isEmpty || !releasable.coversAll(s.seqs)) continue;
      if (this.obligations.release(s.seqs)) {
        this.log.release(s.seqs);
        released = released.union(s.seqs);
      }
    }
    if (!released.isEmpty) {
      this.noteDroppedSpill(released);
      this.arena.release(this.volume, this.lane, released);
    }
    return released;
  }

  /** Disk records of segments wholly inside `seqs`, about to stop being custody. */
  private noteDroppedSpill(seqs: RangeSet): void {
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const seg = this.arena.describe(id);
      if (!seg.buffer && seg.evidence !== undefined && seqs.coversAll(seg.seqs())) this.droppedSpill.push(seg.evidence);
    }
  }

  private droppedSpill: SpillEvidence[] = [];

  /** Spill records no longer custody since the last call (the holder deletes them from its spill set). */
  takeDroppedSpill(): SpillEvidence[] {
    return this.droppedSpill.splice(0);
  }

  /** Ends local custody of `seqs` after a neighbor's receipt covered them (custody transfer). */
  transferredOut(seqs: RangeSet, neighborRetained: RangeSet): boolean {
    if (!this.obligations.transferOut(seqs, neighborRetained)) return false;
    this.log.release(seqs);
    this.inTransfer = this.inTransfer.subtract(seqs);
    // A transferred segment has no local forward obligation left either.
    for (const s of this.sealedSegments()) {
      if (!seqs.coversAll(s.seqs)) continue;
      const edges = this.forwardPins.get(s.id);
      if (edges) {
        for (let i = 0; i < edges.size; i++) this.arena.unpin(s.id, PinReason.in_flight_forward);
        this.forwardPins.delete(s.id);
      }
    }
    this.noteDroppedSpill(seqs);
    this.arena.release(this.volume, this.lane, seqs);
    return true;
  }

  /** Retained RAM-resident units that intersect `seqs`, in sequence order (payloads copied). */
  ramUnits(seqs: RangeSet): TransportUnit[] {
    const out: TransportUnit[] = [];
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const seg = this.arena.describe(id);
      if (!seg.buffer || !seg.seqs().intersects(seqs)) continue;
      for (const u of this.arena.units(id)) {
        if (seqs.overlaps(u.firstSeq, u.lastSeq) && this.log.retained.covers(u.firstSeq, u.lastSeq)) out.push(copyUnit(u));
      }
    }
    return out.sort((a, b) => a.firstSeq - b.firstSeq);
  }

  /** Retained units intersecting `seqs` whose segments live on disk, read back (and verified) from the spill stream. */
  async diskUnits(spill: SpillSet, seqs: RangeSet): Promise<TransportUnit[]> {
    const out: TransportUnit[] = [];
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const seg = this.arena.describe(id);
      const ev = seg.evidence;
      if (seg.buffer || ev === undefined || !seg.seqs().intersects(seqs)) continue;
      const { body } = await spill.read(ev);
      for (const u of decodeSegment(body).units) {
        if (seqs.overlaps(u.firstSeq, u.lastSeq) && this.log.retained.covers(u.firstSeq, u.lastSeq)) out.push(copyUnit(u));
      }
    }
    return out.sort((a, b) => a.firstSeq - b.firstSeq);
  }

  /**
   * Retained units intersecting `seqs`, in sequence order, from RAM and (with `spill`) from disk,
   * reading segment by segment and stopping once `maxUnits` units or about `maxBytes` of payload
   * are gathered — a page costs what it returns, not what the whole range holds. `complete` is
   * true when nothing retained in `seqs` is left after the returned units.
   */
  async unitsPage(spill: SpillSet | undefined, seqs: RangeSet, maxUnits: number, maxBytes: number): Promise<{ units: TransportUnit[]; complete: boolean }> {
    const segs = this.arena
      .segmentsOf(this.volume, this.lane)
      .map((id) => ({ id, d: this.arena.describe(id) }))
      .map((x) => ({ ...x, seqs: x.d.seqs() }))
      .filter((x) => x.seqs.intersects(seqs) && (x.d.buffer !== undefined || (spill !== undefined && x.d.evidence !== undefined)))
      .sort((a, b) => a.seqs.min! - b.seqs.min!);
    const out: TransportUnit[] = [];
    let bytes = 0;
    for (const [i, x] of segs.entries()) {
      let units: readonly TransportUnit[];
      if (x.d.buffer !== undefined) units = this.arena.units(x.id);
      else {
        const { body } = await spill!.read(x.d.evidence!);
        units = decodeSegment(body).units;
      }
      const mine = units.filter((u) => seqs.overlaps(u.firstSeq, u.lastSeq) && this.log.retained.covers(u.firstSeq, u.lastSeq)).map(copyUnit);
      out.push(...mine);
      bytes += mine.reduce((n, u) => n + u.payload.byteLength, 0);
      if ((out.length >= maxUnits || bytes >= maxBytes) && i < segs.length - 1) {
        // Callers page by a cursor (the highest first sequence returned), so a page must hold
        // every wanted unit below its highest one. A segment can mix old and new sequences
        // (re-sent units), so keep only what lies at or below where the unread segments begin.
        let nextMin = Infinity;
        for (const y of segs.slice(i + 1)) nextMin = Math.min(nextMin, y.seqs.intersect(seqs).min ?? Infinity);
        const page = out.filter((u) => u.firstSeq <= nextMin).sort((a, b) => a.firstSeq - b.firstSeq);
        return { units: page, complete: false };
      }
    }
    out.sort((a, b) => a.firstSeq - b.firstSeq);
    return { units: out, complete: true };
  }

  /** Newest persistence evidence of this lane (a completed, in-deadline sync). */
  lastDiskEvidence: SpillEvidence | undefined;

  /** Records a completed, in-deadline sync of segment `id`: residency moves to disk, RAM is freed. */
  spilled(id: number, seqs: RangeSet, evidence: SpillEvidence): void {
    if (!this.arena.markSpilled(id, evidence)) return;
    this.obligations.persisted(seqs);
    if (!this.lastDiskEvidence || evidence.offset >= this.lastDiskEvidence.offset) this.lastDiskEvidence = evidence;
  }

  /** RAM-resident stored bytes of this lane (what protected RAM must be able to preserve). */
  ramStoredBytes(): number {
    let n = 0;
    for (const id of this.arena.segmentsOf(this.volume, this.lane)) {
      const s = this.arena.describe(id);
      if (s.residency === Residency.ram) n += s.fill;
    }
    return n;
  }

  /** Fraction of the open segment's bytes in use (0 without an open segment). */
  openFill(): number {
    const id = this.arena.openSegmentOf(this.volume, this.lane);
    return id === undefined ? 0 : this.arena.describe(id).fill / this.arena.config.segmentBytes;
  }

  /** Fraction of the arena's capacity held in RAM. */
  fillRatio(): number {
    // Asked for every lane on every pressure check: O(1), not a report over all segments.
    return this.arena.ramBytes / this.arena.capacityBytes;
  }
}

/** A unit whose payload, digest and timestamps no longer share memory with an arena segment. */
function copyUnit(u: TransportUnit): TransportUnit {
  return { ...u, commitTs: [...u.commitTs], payload: new Uint8Array(u.payload), digest: new Uint8Array(u.digest) };
}
