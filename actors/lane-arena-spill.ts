import type { Arena } from "../arena/index.ts";
import { SegmentStateError } from "../arena/index.ts";
import { decodeSegment } from "../arena/index.ts";
import { SpillSet } from "../arena/index.ts";
import type { SpillRecordInfo } from "../arena/index.ts";
import type { Clock } from "../core/index.ts";
import type { FileLayer } from "../core/index.ts";
import { Residency } from "../core/index.ts";
import type { TransportUnit } from "../lanes/index.ts";

/** Outcome of one spill round. */
export type SpillOutcome =
  | { readonly kind: "spilled"; readonly segmentIds: number[] }
  | { readonly kind: "deadline_missed"; readonly deadlineMs: number; readonly segmentIds: number[] };

/**
 * The lane-arena actor's spill (its `flushSpill` actor): sealed RAM segments of its arena go to a
 * spill set — the same rotating files a holder spills to — opened on the first spill, so an arena
 * that never spills never touches the disk. A segment's RAM slot is recycled only after a flush
 * produced its persistence evidence; a missed flush deadline leaves custody in RAM, and a later
 * successful flush still credits those records.
 */
export class LaneArenaSpill {
  private set: SpillSet | undefined;
  private readonly written = new Map<SpillRecordInfo, number>();

  constructor(
    private readonly arena: Arena,
    private readonly files: FileLayer,
    private readonly path: string,
    private readonly clock: Clock,
  ) {}

  private async open(): Promise<SpillSet> {
    this.set ??= (await SpillSet.open(this.files, this.path, this.clock)).set;
    return this.set;
  }

  /**
   * Writes the given sealed RAM segments (the export form is captured synchronously, so a later
   * release cannot change the bytes), then flushes with `deadlineMs`. Only on in-time sync do the
   * segments move to disk residency. Ids that are not sealed RAM segments are skipped.
   */
  async spill(segmentIds: readonly number[], deadlineMs: number): Promise<SpillOutcome> {
    const set = await this.open();
    const writes: Promise<unknown>[] = [];
    for (const id of segmentIds) {
      let seg;
      try {
        seg = this.arena.describe(id);
      } catch {
        continue;
      }
      if (seg.residency !== Residency.ram || seg.state !== "sealed" || !seg.span) continue;
      const body = this.arena.exportSegment(id);
      writes.push(set.append(seg.volume, seg.lane, seg.span.first, seg.span.last, body).then((info) => this.written.set(info, id)));
    }
    await Promise.all(writes);
    const result = await set.flush(deadlineMs);
    if (result.kind === "deadline_missed") {
      return { kind: "deadline_missed", deadlineMs, segmentIds: [...this.written.values()] };
    }
    const spilled: number[] = [];
    for (const [info, evidence] of result.evidence) {
      const id = this.written.get(info);
      this.written.delete(info);
      if (id !== undefined && this.arena.markSpilled(id, evidence)) spilled.push(id);
    }
    return { kind: "spilled", segmentIds: spilled };
  }

  /** Reads a disk-resident segment's units back (to forward or recover). Throws SegmentStateError if not spilled. */
  async readBack(segmentId: number): Promise<TransportUnit[]> {
    return decodeSegment(await this.exportSpilled(segmentId)).units;
  }

  /** The export form of a disk-resident segment, for custody transfer without reloading it into RAM. */
  async exportSpilled(segmentId: number): Promise<Uint8Array> {
    const seg = this.arena.describe(segmentId);
    if (seg.residency !== Residency.disk || !seg.evidence) throw new SegmentStateError("segment is not on disk", { segmentId });
    const set = await this.open();
    return (await set.read(seg.evidence)).body;
  }

  /** Closes the spill files if they were opened. */
  async close(): Promise<void> {
    await this.set?.close();
    this.set = undefined;
  }
}
