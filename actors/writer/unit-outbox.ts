import { SpillStream } from "../../arena/index.ts";
import type { Clock } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { decodeMessage, unitSpec } from "../../transport/protocol/index.ts";

/**
 * The volume writer's durable outbox: every unit is appended here, and made durable, before it is
 * sent — and a local sync (SyncCache) makes the outbox durable together with the volume. So a
 * write the application saw acknowledged is either in custody or in the outbox, and a restarted
 * writer ships what custody has not confirmed yet (nothing acknowledged is stranded by a writer
 * crash), and any unit any holder ever received is in the outbox: a restart's first new sequence
 * is above all of them. Files rotate at `fileBytes`; a file whose every unit custody has confirmed
 * is deleted (the newest file always stays, to remember the highest sequence).
 */

const MAX_FLUSH_MS = 3_600_000;

export class UnitOutbox {
  private readonly files = new Map<
    number,
    { stream: SpillStream; path: string; seqs: Map<string, RangeSet>; dropped: Map<string, RangeSet> }
  >();
  private current = 0;
  private currentBytes = 0;
  private flushing: Promise<void> = Promise.resolve();
  /** The flush under way, and the one callers that came during it share (see flush). */
  private flushRunning: Promise<void> | undefined;
  private flushNext: Promise<void> | undefined;
  private appendFailure: unknown;

  private constructor(
    private readonly layer: FileLayer,
    private readonly dir: string,
    private readonly clock: Clock,
    private readonly fileBytes: number,
  ) {}

  /**
   * Opens the outbox in `dir` (creating it), recovering every intact unit of earlier writer
   * processes (a torn tail is cut off: it was never durable, so never sent).
   */
  static async open(
    layer: FileLayer,
    dir: string,
    clock: Clock,
    fileBytes = 64 * 1024 * 1024,
  ): Promise<{ outbox: UnitOutbox; recovered: TransportUnit[] }> {
    await layer.mkdirp(dir);
    const box = new UnitOutbox(layer, dir, clock, fileBytes);
    const names = (await layer.readdir(dir)).filter((n) => /^\d{8}\.log$/.test(n)).sort();
    const recovered: TransportUnit[] = [];
    for (const name of names) {
      const id = Number(name.slice(0, 8));
      const path = `${dir}/${name}`;
      const { stream, recovered: recs } = await SpillStream.open(layer, path, clock);
      const f = { stream, path, seqs: new Map<string, RangeSet>(), dropped: new Map<string, RangeSet>() };
      for (const r of recs) {
        const { body } = await stream.read(r.evidence.offset, r.evidence.length);
        const u = decodeMessage(unitSpec, body) as TransportUnit;
        recovered.push(u);
        f.seqs.set(u.lane, (f.seqs.get(u.lane) ?? RangeSet.EMPTY).add(u.firstSeq, u.lastSeq));
      }
      box.files.set(id, f);
      box.current = Math.max(box.current, id);
      box.currentBytes = stream.size;
    }
    if (box.files.size === 0) await box.rotate();
    return { outbox: box, recovered: recovered.sort((a, b) => a.firstSeq - b.firstSeq) };
  }

  /** Highest sequence of `lane` the outbox holds (0 when none). */
  maxSeq(lane: string): number {
    let m = 0;
    for (const f of this.files.values()) m = Math.max(m, f.seqs.get(lane)?.max ?? 0);
    return m;
  }

  private async rotate(): Promise<void> {
    // Appends not yet flushed stay in the file being left: make them durable now, since `flush`
    // only syncs the newest file.
    const left = this.files.get(this.current);
    if (left !== undefined && (await left.stream.flush(MAX_FLUSH_MS)).kind !== "synced")
      throw new Error("outbox flush did not complete");
    this.current++;
    const path = `${this.dir}/${String(this.current).padStart(8, "0")}.log`;
    const { stream } = await SpillStream.open(this.layer, path, this.clock);
    await this.layer.syncDir(this.dir);
    this.files.set(this.current, { stream, path, seqs: new Map(), dropped: new Map() });
    this.currentBytes = 0;
  }

  /**
   * Appends `unit` (its complete `unit` encoding `data`); durable only after a later `flush`.
   * Appends are serialized in call order.
   */
  append(unit: TransportUnit, data: Uint8Array): Promise<void> {
    const run = async () => {
      if (this.currentBytes >= this.fileBytes) await this.rotate();
      const f = this.files.get(this.current)!;
      await f.stream.append(unit.volume, unit.lane, unit.firstSeq, unit.lastSeq, data);
      this.currentBytes = f.stream.size;
      f.seqs.set(unit.lane, (f.seqs.get(unit.lane) ?? RangeSet.EMPTY).add(unit.firstSeq, unit.lastSeq));
    };
    const appended = this.flushing.then(run);
    // A failed append leaves a unit out of the outbox: every later flush fails, so no sync acknowledges it.
    this.flushing = appended.catch((err: unknown) => void (this.appendFailure ??= err));
    return appended;
  }

  /**
   * Makes everything appended so far durable. Callers that come while a flush runs share the one
   * after it (that one began after their appends), so many concurrent syncs cost two fdatasyncs, not one each.
   */
  flush(): Promise<void> {
    if (this.flushRunning === undefined) return this.startFlush();
    this.flushNext ??= this.flushRunning
      .catch(() => undefined)
      .then(() => {
        this.flushNext = undefined;
        return this.startFlush();
      });
    return this.flushNext;
  }

  private startFlush(): Promise<void> {
    const run = (async () => {
      await this.flushing;
      if (this.appendFailure !== undefined) throw this.appendFailure;
      const r = await this.files.get(this.current)!.stream.flush(MAX_FLUSH_MS);
      if (r.kind !== "synced") throw new Error("outbox flush did not complete");
    })();
    this.flushRunning = run;
    const clear = () => {
      if (this.flushRunning === run) this.flushRunning = undefined;
    };
    run.then(clear, clear);
    return run;
  }

  /** Custody confirmed `seqs` of `lane`: files all of whose units are confirmed are deleted (never the newest). */
  async drop(lane: string, seqs: RangeSet): Promise<void> {
    for (const [id, f] of [...this.files]) {
      const held = f.seqs.get(lane);
      if (held === undefined) continue;
      f.dropped.set(lane, (f.dropped.get(lane) ?? RangeSet.EMPTY).union(seqs.intersect(held)));
      if (id === this.current) continue;
      const done = [...f.seqs].every(([l, r]) => (f.dropped.get(l) ?? RangeSet.EMPTY).coversAll(r));
      if (!done) continue;
      this.files.delete(id);
      await f.stream.close();
      await this.layer.unlink(f.path);
      await this.layer.syncDir(this.dir);
    }
  }

  /** Closes the files. */
  async close(): Promise<void> {
    await this.flushing;
    for (const f of this.files.values()) await f.stream.close();
  }
}
