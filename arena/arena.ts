import type { Clock } from "../core/index.ts";
import { Counters } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { laneKey } from "../core/index.ts";
import { checkIdentifier, type TransportUnit } from "../lanes/index.ts";
import { resolveArenaConfig, type ArenaConfig } from "./arena-config.ts";
import { maxOutstanding, type CreditGeometry } from "./credit-math.ts";
import { promisedSegments, type ArenaLane } from "./arena-lane.ts";
import { arenaReport, type ArenaReport } from "./arena-report.ts";
import type { AppendResult, SealResult } from "./arena-results.ts";
import {
  ArenaFullError,
  CapacityLimitError,
  CreditExceededError,
  InvalidArenaRequestError,
  SegmentStateError,
  UnitTooLargeError,
  UnknownSegmentError,
} from "./errors.ts";
import { Residency } from "../core/index.ts";
import { PIN_REASONS, PinReason, pinIndex } from "./pin-reason.ts";
import { decodeSegment, encodeSegment } from "./segment-codec.ts";
import { SegmentPool } from "./segment-pool.ts";
import { SegmentState, unitRecordBytes, type Segment } from "./segment.ts";
import type { SpillEvidence } from "./spill-stream.ts";

export type { ArenaReport } from "./arena-report.ts";
export type { AppendResult, SealResult } from "./arena-results.ts";

/**
 * One holder's lane arena: fixed-size segments from a pool with a hard byte limit, grown in
 * increments; per-lane open segments; pins by reason; ingress credits; whole-segment reclaim
 * from metadata. Pure logic (no I/O): spilling is driven from outside with `markSpilled`.
 *
 * Three operations that are never confused:
 * - discard (`release`/`discard`): obsolete for every local obligation → the custody pin goes, and
 *   the RAM slot is recycled once no pin remains; no byte is written anywhere;
 * - spill (`markSpilled`): custody kept, residency moves ram → disk on persistence evidence;
 * - export/import: the self-describing form of a sealed segment, for custody transfer to another holder.
 *
 * Every method that refuses bad input throws a CustodyError subclass, counts it by code in
 * `counters`, and leaves the arena unchanged.
 */
export class Arena {
  readonly config: ArenaConfig;
  readonly counters: Counters;
  private readonly clock: Clock;
  private readonly geometry: CreditGeometry;
  private readonly manifestSlots: number;
  private capacitySlots: number;
  private readonly pool: SegmentPool;
  private readonly lanes = new Map<string, ArenaLane>();
  private lastLane: ArenaLane | undefined;

  constructor(config: Partial<ArenaConfig>, clock: Clock, counters: Counters = new Counters()) {
    this.config = resolveArenaConfig(config);
    this.clock = clock;
    this.counters = counters;
    this.geometry = { segmentBytes: this.config.segmentBytes, maxUnitBytes: this.config.maxUnitBytes };
    this.manifestSlots = this.config.manifestReserveBytes / this.config.segmentBytes;
    this.capacitySlots = this.config.initialBytes / this.config.segmentBytes;
    this.pool = new SegmentPool(this.config.segmentBytes);
  }

  // ---- capacity -------------------------------------------------------------------------------

  /** Admitted (secured) capacity in bytes. */
  get capacityBytes(): number {
    return this.capacitySlots * this.config.segmentBytes;
  }

  /** RAM held by segments (whole segments): `report().ramBytes` without walking every segment. */
  get ramBytes(): number {
    return this.pool.ramSlots * this.config.segmentBytes;
  }

  private get freeSlots(): number {
    return this.capacitySlots - this.pool.ramSlots;
  }

  /** Fresh segments the lanes' outstanding credits may still need (see promisedSegments). */
  private promisedSlots(exceptKey?: string, remainingOverride?: number): number {
    return promisedSegments(this.geometry, this.lanes, exceptKey, remainingOverride);
  }

  /** Free segments not promised to credits or reserved for manifests. */
  private spareSlots(): number {
    return this.freeSlots - this.manifestSlots - this.promisedSlots();
  }

  /** True when unpromised space is below the low-water mark and the hard limit allows growth. */
  wantsIncrement(): boolean {
    return (
      this.capacityBytes < this.config.hardLimitBytes &&
      this.spareSlots() * this.config.segmentBytes < this.config.growthLowWaterBytes
    );
  }

  /**
   * Adds secured capacity (default one `incrementBytes` step, capped at the hard limit). Call it only
   * once the memory is really available: hoped-for capacity must never back credits.
   * Throws CapacityLimitError when already at the limit.
   */
  secureIncrement(bytes: number = this.config.incrementBytes): number {
    return this.guard(() => {
      if (!Number.isSafeInteger(bytes) || bytes <= 0 || bytes % this.config.segmentBytes !== 0) {
        throw new InvalidArenaRequestError("increment must be a positive multiple of segmentBytes", { bytes });
      }
      const room = this.config.hardLimitBytes - this.capacityBytes;
      if (room <= 0)
        throw new CapacityLimitError({ capacityBytes: this.capacityBytes, hardLimitBytes: this.config.hardLimitBytes });
      this.capacitySlots += Math.min(bytes, room) / this.config.segmentBytes;
      return this.capacityBytes;
    });
  }

  // ---- credits --------------------------------------------------------------------------------

  private laneState(volume: string, lane: string): ArenaLane {
    const key = laneKey(volume, lane);
    let l = this.lanes.get(key);
    if (!l)
      this.lanes.set(
        key,
        (l = { volume, lane, open: undefined, outstanding: 0, released: RangeSet.EMPTY, segments: new Set() }),
      );
    return l;
  }

  /**
   * Grants up to `requested` credit bytes to a lane and returns what was granted (possibly 0:
   * credits are withheld when admitted capacity, minus outstanding credits, minus the reserve for
   * open segments and manifests, cannot land them). Never over-grants.
   */
  grant(volume: string, lane: string, requested: number): number {
    return this.guard(() => {
      this.checkLane(volume, lane);
      if (!Number.isSafeInteger(requested) || requested < 0) {
        throw new InvalidArenaRequestError("credit request must be a non-negative integer", { requested });
      }
      const key = laneKey(volume, lane);
      const l = this.lanes.get(key);
      const outstanding = l?.outstanding ?? 0;
      const remaining = l?.open?.remaining ?? 0;
      const available = this.freeSlots - this.manifestSlots - this.promisedSlots(key);
      const ceiling = maxOutstanding(this.geometry, available, remaining);
      const granted = Math.max(0, Math.min(requested, ceiling - outstanding));
      if (granted > 0) this.laneState(volume, lane).outstanding += granted;
      return granted;
    });
  }

  /** Outstanding (granted, unused) credit bytes of a lane. */
  outstanding(volume: string, lane: string): number {
    return this.lanes.get(laneKey(volume, lane))?.outstanding ?? 0;
  }

  /** Withdraws a lane's unused credits (the sender gave them back or its grant expired); returns them. */
  revoke(volume: string, lane: string): number {
    const l = this.lanes.get(laneKey(volume, lane));
    if (!l) return 0;
    const n = l.outstanding;
    l.outstanding = 0;
    return n;
  }

  // ---- units ----------------------------------------------------------------------------------

  /** Stored size of a unit in a segment; units above `config.maxUnitBytes` are refused. */
  recordBytes(u: TransportUnit): number {
    return unitRecordBytes(u);
  }

  /**
   * Copies a validated unit (and the writer `attestation` it came with, kept while the unit is) into
   * its lane's open segment (opening a fresh one, and sealing the full one, when it does not fit),
   * consuming its record size in credits. Throws UnitTooLargeError, CreditExceededError (no state
   * change), or ArenaFullError (impossible for credited units).
   */
  append(u: TransportUnit, attestation?: string): AppendResult {
    // Hot path: no closure, and the last lane is cached to skip building its key.
    try {
      const rec = unitRecordBytes(u);
      if (rec > this.config.maxUnitBytes) {
        throw new UnitTooLargeError({ recordBytes: rec, maxUnitBytes: this.config.maxUnitBytes });
      }
      let l = this.lastLane;
      if (!l || l.volume !== u.volume || l.lane !== u.lane) {
        l = this.lanes.get(laneKey(u.volume, u.lane));
        if (l) this.lastLane = l;
      }
      if (!l || l.outstanding < rec) {
        throw new CreditExceededError({
          volume: u.volume,
          lane: u.lane,
          recordBytes: rec,
          outstanding: l?.outstanding ?? 0,
        });
      }
      let seg = l.open;
      let opened = false;
      let sealedFull: number | undefined;
      if (!seg || seg.remaining < rec) {
        if (this.freeSlots < 1) throw new ArenaFullError({ volume: u.volume, lane: u.lane });
        if (seg) {
          sealedFull = seg.id;
          this.closeOpen(l);
        }
        seg = this.openSegment(l);
        opened = true;
      }
      const index = seg.append(u, rec, attestation);
      l.outstanding -= rec;
      return { segmentId: seg.id, index, opened, sealedFull };
    } catch (err) {
      if (err instanceof CustodyError) this.counters.inc(err.code);
      throw err;
    }
  }

  private openSegment(l: ArenaLane): Segment {
    const seg = this.pool.open(l.volume, l.lane, this.clock.now());
    l.segments.add(seg);
    l.open = seg;
    return seg;
  }

  /** Seals the lane's open segment; drops custody at once when its ranges were already released. */
  private closeOpen(l: ArenaLane): void {
    const seg = l.open!;
    seg.state = SegmentState.sealed;
    l.open = undefined;
    if (!l.released.isEmpty && l.released.coversAll(seg.seqs())) this.dropCustody(seg);
    else this.recycleIfFree(seg);
  }

  /** Id of the lane's open segment, if any. */
  openSegmentOf(volume: string, lane: string): number | undefined {
    return this.lanes.get(laneKey(volume, lane))?.open?.id;
  }

  /**
   * Seals the lane's open segment (max open delay reached, or asked). Deferred — the segment stays
   * open and `seal_deferred` is counted — when stranding its free tail would leave granted credits
   * without space; it can seal once those credits are used or revoked, or capacity grows.
   */
  seal(volume: string, lane: string): SealResult {
    const key = laneKey(volume, lane);
    const l = this.lanes.get(key);
    const seg = l?.open;
    if (!l || !seg) return { segmentId: undefined, deferred: false };
    const promised = this.promisedSlots(key, 0);
    if (promised > this.freeSlots - this.manifestSlots) {
      this.counters.inc("seal_deferred");
      return { segmentId: seg.id, deferred: true };
    }
    this.closeOpen(l);
    return { segmentId: seg.id, deferred: false };
  }

  // ---- pins, release, recycling ---------------------------------------------------------------

  /** True while segment `id` exists (not yet recycled). */
  holds(id: number): boolean {
    return this.pool.get(id) !== undefined;
  }

  private segment(id: number): Segment {
    const seg = this.pool.get(id);
    if (!seg) throw new UnknownSegmentError(id);
    return seg;
  }

  /** Adds one pin of `reason`. Throws UnknownSegmentError or InvalidPinReasonError. */
  pin(segmentId: number, reason: PinReason): void {
    this.guard(() => {
      const i = pinIndex(reason);
      this.segment(segmentId).pins[i]! += 1;
    });
  }

  /**
   * Removes one pin of `reason`; a sealed segment with no pin left returns to the pool. Returns true
   * when it was recycled. Throws UnknownSegmentError, InvalidPinReasonError, or SegmentStateError
   * when no such pin is held.
   */
  unpin(segmentId: number, reason: PinReason): boolean {
    return this.guard(() => {
      const i = pinIndex(reason);
      const seg = this.segment(segmentId);
      if (seg.pins[i]! === 0) throw new SegmentStateError("segment holds no pin of that reason", { segmentId, reason });
      if (reason === PinReason.custody_obligation && seg.custodyHeld && seg.pins[i] === 1) seg.custodyHeld = false;
      seg.pins[i]! -= 1;
      return this.recycleIfFree(seg);
    });
  }

  private dropCustody(seg: Segment): boolean {
    if (!seg.custodyHeld) return false;
    seg.custodyHeld = false;
    seg.pins[PIN_REASONS.indexOf(PinReason.custody_obligation)]! -= 1;
    return this.recycleIfFree(seg);
  }

  private recycleIfFree(seg: Segment): boolean {
    if (!this.pool.recycleIfFree(seg)) return false;
    for (const l of this.lanes.values()) l.segments.delete(seg);
    return true;
  }

  /**
   * The lane's obligations for `ranges` ended (a successor took custody, release authorised).
   * Every sealed segment whose sequences all lie in released ranges loses its custody pin, and is
   * recycled once no other pin remains — whole segments, decided from metadata, with no disk I/O.
   * Returns the ids of segments whose custody ended.
   */
  release(volume: string, lane: string, ranges: RangeSet): number[] {
    return this.guard(() => {
      this.checkLane(volume, lane);
      const l = this.laneState(volume, lane);
      l.released = l.released.union(ranges);
      const ended: number[] = [];
      for (const seg of [...l.segments]) {
        if (seg.state === SegmentState.sealed && seg.custodyHeld && l.released.coversAll(seg.seqs())) {
          ended.push(seg.id);
          this.dropCustody(seg);
        }
      }
      return ended;
    });
  }

  /**
   * Discards a sealed segment that is obsolete for every local obligation: drops its custody pin
   * (other pins still hold it). Returns true when it was recycled. Zero disk writes, by design.
   */
  discard(segmentId: number): boolean {
    return this.guard(() => {
      const seg = this.segment(segmentId);
      if (seg.state !== SegmentState.sealed)
        throw new SegmentStateError("only sealed segments can be discarded", { segmentId });
      if (!seg.custodyHeld) return false;
      return this.dropCustody(seg);
    });
  }

  // ---- spill ----------------------------------------------------------------------------------

  /** Sealed RAM segments that may move to disk (not being forwarded from RAM), oldest first. */
  spillCandidates(): number[] {
    const out: Segment[] = [];
    for (const seg of this.pool.values()) {
      if (
        seg.state === SegmentState.sealed &&
        seg.residency === Residency.ram &&
        seg.pinsOf(PinReason.in_flight_forward) === 0
      )
        out.push(seg);
    }
    return out.sort((a, b) => a.openedAt - b.openedAt || a.id - b.id).map((s) => s.id);
  }

  /**
   * Records persistence evidence for a spilled segment: custody continues at disk residency and
   * the RAM slot returns to the pool. Returns false (no change) when the segment meanwhile ended.
   */
  markSpilled(segmentId: number, evidence: SpillEvidence): boolean {
    return this.pool.toDisk(segmentId, evidence);
  }

  // ---- read, export, import -------------------------------------------------------------------

  /** Metadata view of a segment (for forwarding, spilling, reports). Throws UnknownSegmentError. */
  describe(segmentId: number): Readonly<Segment> {
    return this.guard(() => this.segment(segmentId));
  }

  /** Ids of a lane's live segments, oldest first. */
  segmentsOf(volume: string, lane: string): number[] {
    const l = this.lanes.get(laneKey(volume, lane));
    return l ? [...l.segments].map((s) => s.id).sort((a, b) => a - b) : [];
  }

  /** The units of a RAM-resident segment (payloads are views; copy before the segment recycles). */
  units(segmentId: number): TransportUnit[] {
    return this.guard(() => {
      const seg = this.segment(segmentId);
      if (!seg.buffer) throw new SegmentStateError("segment is not in RAM", { segmentId });
      const out: TransportUnit[] = [];
      for (let i = 0; i < seg.unitCount; i++) out.push(seg.unitFrom(seg.buffer, i));
      return out;
    });
  }

  /**
   * Export form of a sealed RAM segment (see segment-codec), with the attestations its units were stored with. Throws
   * SegmentStateError otherwise.
   */
  exportSegment(segmentId: number): Uint8Array {
    return this.guard(() => {
      const seg = this.segment(segmentId);
      if (seg.state !== SegmentState.sealed || !seg.buffer)
        throw new SegmentStateError("only sealed, RAM-resident segments export directly", { segmentId });
      return encodeSegment(seg, seg.buffer);
    });
  }

  /**
   * Takes custody of an exported segment from another holder: validates the whole form (checksum
   * and every unit digest), then copies its units and attestations into a free segment as sealed,
   * custody-pinned. Needs a segment not promised to credits; throws ArenaFullError otherwise,
   * SegmentFormatError or a unit error for bad bytes — all without changing the arena.
   */
  importSegment(bytes: Uint8Array): { segmentId: number; volume: string; lane: string; seqs: RangeSet } {
    return this.guard(() => {
      const d = decodeSegment(bytes);
      if (d.data.length > this.config.segmentBytes) {
        throw new UnitTooLargeError({ recordBytes: d.data.length, segmentBytes: this.config.segmentBytes });
      }
      if (this.spareSlots() < 1) throw new ArenaFullError({ volume: d.volume, lane: d.lane, import: true });
      const l = this.laneState(d.volume, d.lane);
      const keepOpen = l.open;
      const seg = this.openSegment(l);
      l.open = keepOpen;
      // The attestations the form carries stay with the units (a transfer's or a spill record's).
      d.units.forEach((u, i) => seg.append(u, unitRecordBytes(u), d.attestations[i]));
      seg.state = SegmentState.sealed;
      return { segmentId: seg.id, volume: d.volume, lane: d.lane, seqs: seg.seqs() };
    });
  }

  /**
   * Takes back custody of a segment found on disk at start (a spill record written by an earlier
   * incarnation): validated like an import (checksum and every unit digest), then held at disk
   * residency with `evidence`, using no RAM once adopted. Throws like `importSegment`.
   */
  adoptSpilled(
    bytes: Uint8Array,
    evidence: SpillEvidence,
  ): { segmentId: number; volume: string; lane: string; seqs: RangeSet } {
    const r = this.importSegment(bytes);
    this.markSpilled(r.segmentId, evidence);
    return r;
  }

  // ---- report ---------------------------------------------------------------------------------

  /** Bytes by residency, pins by reason, outstanding credits, grantable space. */
  report(): ArenaReport {
    const slots = {
      geometry: this.geometry,
      capacityBytes: this.capacityBytes,
      hardLimitBytes: this.config.hardLimitBytes,
      ramSlots: this.pool.ramSlots,
      freeSlots: this.freeSlots,
      spareSlots: this.spareSlots(),
      wantsIncrement: this.wantsIncrement(),
    };
    return arenaReport(this.pool.values(), this.lanes, slots);
  }

  // ---- helpers --------------------------------------------------------------------------------

  private checkLane(volume: string, lane: string): void {
    try {
      checkIdentifier("volume", volume);
      checkIdentifier("lane", lane);
    } catch (err) {
      throw new InvalidArenaRequestError("invalid volume or lane", { volume, lane, cause: (err as Error).message });
    }
  }

  /** Runs `fn`; a CustodyError it throws is counted by code and rethrown. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof CustodyError) this.counters.inc(err.code);
      throw err;
    }
  }
}
