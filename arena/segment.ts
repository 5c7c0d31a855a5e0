import { RangeSet } from "../lanes/index.ts";
import { UNIT_DIGEST_BYTES, type TransportUnit } from "../lanes/index.ts";
import { Residency, type SegmentResidency } from "../core/index.ts";
import { PIN_REASONS, type PinReason } from "./pin-reason.ts";
import type { SpillEvidence } from "./spill-stream.ts";

/** Per-unit metadata stride in `Segment.meta`: offset, payloadLen, firstSeq, lastSeq, term. */
const STRIDE = 5;

/** Bytes a unit occupies inside a segment: digest, one float64 commit timestamp per record, payload. */
export function unitRecordBytes(u: Pick<TransportUnit, "firstSeq" | "lastSeq" | "payload">): number {
  return UNIT_DIGEST_BYTES + 8 * (u.lastSeq - u.firstSeq + 1) + u.payload.length;
}

/** Segment lifecycle within the arena. */
export const SegmentState = { open: "open", sealed: "sealed" } as const;
export type SegmentState = (typeof SegmentState)[keyof typeof SegmentState];

/**
 * One fixed-size segment of one lane. Unit bytes are copied into a preallocated buffer; per-unit
 * metadata lives in one growable Float64Array, so retaining a unit allocates no JS object.
 * Appends happen only while open; a sealed segment is immutable. The arena owns state changes.
 */
export class Segment {
  readonly id: number;
  readonly volume: string;
  readonly lane: string;
  readonly openedAt: number;
  state: SegmentState = SegmentState.open;
  residency: SegmentResidency = Residency.ram;
  /** The RAM copy; undefined once spilled and recycled. */
  buffer: Buffer | undefined;
  /** Bytes used in `buffer` (the stored length; also the spilled length of the data part). */
  fill = 0;
  unitCount = 0;
  /** Per-unit metadata, STRIDE float64s per unit. */
  meta: Float64Array;
  /** Pin counts indexed like PIN_REASONS. */
  readonly pins = new Int32Array(PIN_REASONS.length);
  /** True while the arena's own custody obligation pin is held (dropped once by release/discard). */
  custodyHeld = false;
  /** Disk location once spilled. */
  evidence: SpillEvidence | undefined;
  /**
   * Per unit index, the writer attestation token (base64) the unit was stored with; undefined
   * until a unit has one. Held exactly as long as the RAM copy: the pool drops it when the segment
   * spills (the spill record stores it) or recycles. Units of one attestation share its string.
   */
  attestations: (string | undefined)[] | undefined;
  private minSeq = Infinity;
  private maxSeq = -Infinity;
  private gapless = true;

  constructor(id: number, volume: string, lane: string, buffer: Buffer, openedAt: number, unitCapacity = 64) {
    this.id = id;
    this.volume = volume;
    this.lane = lane;
    this.buffer = buffer;
    this.openedAt = openedAt;
    this.meta = new Float64Array(unitCapacity * STRIDE);
  }

  /** Free bytes left in the buffer. */
  get remaining(): number {
    return (this.buffer?.length ?? 0) - this.fill;
  }

  /** Total pins over all reasons. */
  get pinCount(): number {
    let n = 0;
    for (const p of this.pins) n += p;
    return n;
  }

  /** Pins of one reason. */
  pinsOf(reason: PinReason): number {
    return this.pins[PIN_REASONS.indexOf(reason)] ?? 0;
  }

  /**
   * Copies `u` into the buffer. The caller (the arena) has checked the segment is open, in RAM and
   * that `recordBytes` fits; `attestation` is the writer's token the unit came with, if any.
   * Returns the unit's index in the segment.
   */
  append(u: TransportUnit, recordBytes: number, attestation?: string): number {
    const buf = this.buffer!;
    let o = this.fill;
    buf.set(u.digest, o);
    o += UNIT_DIGEST_BYTES;
    const ts = u.commitTs;
    for (let k = 0; k < ts.length; k++) o = buf.writeDoubleLE(ts[k]!, o);
    buf.set(u.payload, o);
    const i = this.unitCount;
    if ((i + 1) * STRIDE > this.meta.length) {
      // Units of a lane tend to be alike in size: grow straight to what this segment can still
      // hold at the current unit size (at least double), so a segment resizes once or twice.
      const fit = i + 1 + Math.ceil((buf.length - this.fill) / recordBytes);
      const grown = new Float64Array(Math.max(this.meta.length * 2, fit * STRIDE));
      grown.set(this.meta);
      this.meta = grown;
    }
    const m = i * STRIDE;
    this.meta[m] = this.fill;
    this.meta[m + 1] = u.payload.length;
    this.meta[m + 2] = u.firstSeq;
    this.meta[m + 3] = u.lastSeq;
    this.meta[m + 4] = u.term;
    if (i > 0 && u.firstSeq !== this.maxSeq + 1) this.gapless = false;
    if (u.firstSeq < this.minSeq) this.minSeq = u.firstSeq;
    if (u.lastSeq > this.maxSeq) this.maxSeq = u.lastSeq;
    if (attestation !== undefined) (this.attestations ??= [])[i] = attestation;
    this.fill += recordBytes;
    this.unitCount = i + 1;
    return i;
  }

  /** Lowest and highest sequence held (undefined when empty). */
  get span(): { first: number; last: number } | undefined {
    return this.unitCount === 0 ? undefined : { first: this.minSeq, last: this.maxSeq };
  }

  /** Exact sequences held, from metadata only (never reads unit bytes). */
  seqs(): RangeSet {
    if (this.unitCount === 0) return RangeSet.EMPTY;
    if (this.gapless) return RangeSet.of(this.minSeq, this.maxSeq);
    const ranges: [number, number][] = [];
    for (let i = 0; i < this.unitCount; i++) ranges.push([this.meta[i * STRIDE + 2]!, this.meta[i * STRIDE + 3]!]);
    return RangeSet.from(ranges);
  }

  /** Metadata of unit `i`. */
  unitMeta(i: number): { offset: number; payloadLength: number; firstSeq: number; lastSeq: number; term: number } {
    const m = i * STRIDE;
    return {
      offset: this.meta[m]!,
      payloadLength: this.meta[m + 1]!,
      firstSeq: this.meta[m + 2]!,
      lastSeq: this.meta[m + 3]!,
      term: this.meta[m + 4]!,
    };
  }

  /** The writer attestation token unit `i` was stored with (undefined: none, or no longer in RAM). */
  attestationAt(i: number): string | undefined {
    return this.attestations?.[i];
  }

  /** Unit `i` rebuilt from `data` (the buffer, or bytes read back from disk); payload and digest are views. */
  unitFrom(data: Uint8Array, i: number): TransportUnit {
    const { offset, payloadLength, firstSeq, lastSeq, term } = this.unitMeta(i);
    const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    let o = offset + UNIT_DIGEST_BYTES;
    const commitTs: number[] = [];
    for (let s = firstSeq; s <= lastSeq; s++, o += 8) commitTs.push(view.readDoubleLE(o));
    return {
      volume: this.volume,
      lane: this.lane,
      term,
      firstSeq,
      lastSeq,
      commitTs,
      digest: view.subarray(offset, offset + UNIT_DIGEST_BYTES),
      payload: view.subarray(o, o + payloadLength),
    };
  }
}
