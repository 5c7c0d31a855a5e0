import type { Arena } from "../../arena/index.ts";
import { SegmentStateError } from "../../arena/index.ts";
import { decodeSegment } from "../../arena/index.ts";
import { SpillSet } from "../../arena/index.ts";
import type { SpillEvidence, SpillRecordInfo } from "../../arena/index.ts";
import type { Clock } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import { Residency } from "../../core/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";

/**
 * One sealed segment to write: where it belongs, and its export form read when its turn comes (undefined: gone
 * meanwhile, skip it).
 */
export interface SpillItem<T> {
  readonly volume: string;
  readonly lane: string;
  readonly first: number;
  readonly last: number;
  readonly tag: T;
  body(): Uint8Array | undefined;
}

/** What one write-and-flush round achieved: evidence per tag only for an in-deadline sync. */
export type SpillRound<T> =
  | { readonly kind: "synced"; readonly spilled: { tag: T; evidence: SpillEvidence }[] }
  | { readonly kind: "deadline_missed"; readonly pending: T[] };

/**
 * The one spill driver: writes sealed segments' export forms to a spill set, one after another,
 * then flushes against a deadline. Persistence evidence exists only for records a completed,
 * in-deadline sync covered; records of a round that missed its deadline stay pending and a later
 * round's sync credits them. Used by the holder for all its lanes (one append stream, one
 * fdatasync per flush: holder-custody-moves.ts) and by the lane-arena actor's own `flushSpill`.
 */
export class SegmentSpillWriter<T> {
  /** Records written but not yet covered by an in-deadline sync. */
  private readonly unsynced = new Map<SpillRecordInfo, T>();

  /** True while some written record still waits for an in-deadline sync. */
  get pending(): boolean {
    return this.unsynced.size > 0;
  }

  /** Writes `items` in order (`onWritten` after each append), then flushes within `deadlineMs`. */
  async write(
    set: SpillSet,
    items: Iterable<SpillItem<T>>,
    deadlineMs: number,
    onWritten?: (tag: T) => void,
  ): Promise<SpillRound<T>> {
    for (const it of items) {
      const body = it.body();
      if (body === undefined) continue;
      const info = await set.append(it.volume, it.lane, it.first, it.last, body);
      onWritten?.(it.tag);
      this.unsynced.set(info, it.tag);
    }
    const r = await set.flush(deadlineMs);
    if (r.kind === "deadline_missed") return { kind: "deadline_missed", pending: [...this.unsynced.values()] };
    const spilled: { tag: T; evidence: SpillEvidence }[] = [];
    for (const [info, evidence] of r.evidence) {
      const tag = this.unsynced.get(info);
      if (tag === undefined) continue;
      this.unsynced.delete(info);
      spilled.push({ tag, evidence });
    }
    return { kind: "synced", spilled };
  }
}

/** Outcome of one spill round. */
export type SpillOutcome =
  | { readonly kind: "spilled"; readonly segmentIds: number[] }
  | { readonly kind: "deadline_missed"; readonly deadlineMs: number; readonly segmentIds: number[] };

/**
 * The lane-arena actor's spill (its `flushSpill` actor) for an actor that owns its spill target:
 * sealed RAM segments of its arena go through the spill driver to a spill set — the same rotating
 * files a holder spills to — opened on the first spill, so an arena that never spills never
 * touches the disk. A segment's RAM slot is recycled only after a flush produced its persistence
 * evidence; a missed flush deadline leaves custody in RAM, and a later successful flush still
 * credits those records. (A holder's lane actors own no spill target: the holder writes all its
 * lanes to one stream and hands each lane's evidence to its actor as `recordSpill`.)
 */
export class LaneArenaSpill {
  private set: SpillSet | undefined;
  private readonly writer = new SegmentSpillWriter<number>();

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

  /** A sealed RAM segment's export form, or undefined when it is not (or no longer) one. */
  private body(id: number): Uint8Array | undefined {
    if (!this.arena.holds(id)) return undefined;
    const seg = this.arena.describe(id);
    if (seg.residency !== Residency.ram || seg.state !== "sealed" || !seg.span) return undefined;
    return this.arena.exportSegment(id);
  }

  /**
   * Writes the given sealed RAM segments (each export form is read when its turn comes, so a
   * segment released meanwhile is skipped), then flushes with `deadlineMs`. Only on in-time sync
   * do the segments move to disk residency. Ids that are not sealed RAM segments are skipped.
   */
  async spill(segmentIds: readonly number[], deadlineMs: number): Promise<SpillOutcome> {
    const set = await this.open();
    const items: SpillItem<number>[] = [];
    for (const id of segmentIds) {
      if (!this.arena.holds(id)) continue;
      const seg = this.arena.describe(id);
      if (!seg.span) continue;
      items.push({
        volume: seg.volume,
        lane: seg.lane,
        first: seg.span.first,
        last: seg.span.last,
        tag: id,
        body: () => this.body(id),
      });
    }
    const r = await this.writer.write(set, items, deadlineMs);
    if (r.kind === "deadline_missed") return { kind: "deadline_missed", deadlineMs, segmentIds: r.pending };
    const spilled: number[] = [];
    for (const { tag: id, evidence } of r.spilled) if (this.arena.markSpilled(id, evidence)) spilled.push(id);
    return { kind: "spilled", segmentIds: spilled };
  }

  /** Reads a disk-resident segment's units back (to forward or recover). Throws SegmentStateError if not spilled. */
  async readBack(segmentId: number): Promise<TransportUnit[]> {
    return decodeSegment(await this.exportSpilled(segmentId)).units;
  }

  /** The export form of a disk-resident segment, for custody transfer without reloading it into RAM. */
  async exportSpilled(segmentId: number): Promise<Uint8Array> {
    const seg = this.arena.describe(segmentId);
    if (seg.residency !== Residency.disk || !seg.evidence)
      throw new SegmentStateError("segment is not on disk", { segmentId });
    const set = await this.open();
    return (await set.read(seg.evidence)).body;
  }

  /** Closes the spill files if they were opened. */
  async close(): Promise<void> {
    await this.set?.close();
    this.set = undefined;
  }
}
