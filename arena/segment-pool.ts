import { Residency } from "../core/index.ts";
import { PIN_REASONS, PinReason } from "./pin-reason.ts";
import { Segment, SegmentState } from "./segment.ts";
import type { SpillEvidence } from "./spill-stream.ts";

/**
 * The arena's live segments by id and the RAM buffers behind them: a fresh segment reuses a
 * returned buffer before allocating one, and `ramSlots` counts the segments holding RAM.
 * Capacity and credit decisions stay with the arena.
 */
export class SegmentPool {
  private readonly byId = new Map<number, Segment>();
  private readonly freeBuffers: Buffer[] = [];
  private nextId = 1;
  private ram = 0;

  constructor(private readonly segmentBytes: number) {}

  /** Segments holding a RAM buffer. */
  get ramSlots(): number {
    return this.ram;
  }

  /** The live segment `id`, if any. */
  get(id: number): Segment | undefined {
    return this.byId.get(id);
  }

  /** Every live segment, in creation order. */
  values(): IterableIterator<Segment> {
    return this.byId.values();
  }

  /** A new open, custody-pinned segment of a lane, in RAM. */
  open(volume: string, lane: string, openedAt: number): Segment {
    const buf = this.freeBuffers.pop() ?? Buffer.allocUnsafeSlow(this.segmentBytes);
    const seg = new Segment(this.nextId++, volume, lane, buf, openedAt);
    seg.pins[PIN_REASONS.indexOf(PinReason.custody_obligation)] = 1;
    seg.custodyHeld = true;
    this.ram++;
    this.byId.set(seg.id, seg);
    return seg;
  }

  /** Returns a sealed segment without pins to the pool (its RAM buffer too). True when recycled. */
  recycleIfFree(seg: Segment): boolean {
    if (seg.state !== SegmentState.sealed || seg.pinCount > 0) return false;
    if (seg.residency === Residency.ram && seg.buffer) {
      this.freeBuffers.push(seg.buffer);
      this.ram--;
    }
    seg.buffer = undefined;
    seg.attestations = undefined;
    this.byId.delete(seg.id);
    return true;
  }

  /**
   * Moves a RAM segment to disk residency with `evidence`, freeing its buffer. False when it is not a live RAM segment.
   */
  toDisk(segmentId: number, evidence: SpillEvidence): boolean {
    const seg = this.byId.get(segmentId);
    if (!seg || seg.residency !== Residency.ram) return false;
    this.freeBuffers.push(seg.buffer!);
    seg.buffer = undefined;
    // The spill record stores the units' attestations; RAM keeps none for a disk segment.
    seg.attestations = undefined;
    seg.residency = Residency.disk;
    seg.evidence = evidence;
    this.ram--;
    return true;
  }
}
