import { basename, dirname } from "node:path";
import type { Clock } from "../core/index.ts";
import type { FileLayer } from "../core/index.ts";
import {
  SpillRecordError,
  SpillStream,
  type FlushResult,
  type SpillEvidence,
  type SpillRecordInfo,
} from "./spill-stream.ts";

/**
 * A holder's spill stream as a series of files: `<path>`, `<path>.1`, `<path>.2`, … Records are
 * appended to the newest file; once it holds `rotateBytes` the next file starts. A file whose
 * every record has been released (and that is not the newest) is deleted — so a store that
 * releases what a newer base covers gives its disk back, instead of growing for ever. Every file
 * keeps the spill stream's guarantees (evidence only from a completed, in-deadline sync; a torn
 * tail cut off at open).
 */
export class SpillSet {
  private readonly files = new Map<number, { stream: SpillStream; path: string; live: Set<number> }>();
  private current = 0;

  private constructor(
    private readonly layer: FileLayer,
    private readonly path: string,
    private readonly clock: Clock,
    private readonly rotateBytes: number,
  ) {}

  private fileName(id: number): string {
    return id === 0 ? this.path : `${this.path}.${id}`;
  }

  /**
   * Opens every file of the set (creating the first), recovering each intact record with evidence
   * stamped at open (`SpillStream.open`), oldest file first.
   */
  static async open(
    layer: FileLayer,
    path: string,
    clock: Clock,
    rotateBytes = 64 * 1024 * 1024,
  ): Promise<{ set: SpillSet; recovered: { info: SpillRecordInfo; evidence: SpillEvidence }[] }> {
    const set = new SpillSet(layer, path, clock, rotateBytes);
    const dir = dirname(path);
    await layer.mkdirp(dir);
    const base = basename(path);
    const ids = [0];
    for (const n of await layer.readdir(dir)) {
      const m = n.startsWith(`${base}.`) ? /^(\d+)$/.exec(n.slice(base.length + 1)) : null;
      if (m !== null) ids.push(Number(m[1]));
    }
    ids.sort((a, b) => a - b);
    const recovered: { info: SpillRecordInfo; evidence: SpillEvidence }[] = [];
    for (const id of ids) {
      const file = set.fileName(id);
      if (id !== 0 && !(await layer.exists(file))) continue;
      const opened = await SpillStream.open(layer, file, clock);
      set.files.set(id, {
        stream: opened.stream,
        path: file,
        live: new Set(opened.recovered.map((r) => r.info.offset)),
      });
      set.current = Math.max(set.current, id);
      recovered.push(...opened.recovered);
    }
    return { set, recovered };
  }

  /** Bytes in all files of the set. */
  get bytes(): number {
    let n = 0;
    for (const f of this.files.values()) n += f.stream.size;
    return n;
  }

  /** Files in the set (diagnostics). */
  get fileCount(): number {
    return this.files.size;
  }

  /** Records written but not yet covered by a completed, in-deadline sync. */
  get unsyncedCount(): number {
    let n = 0;
    for (const f of this.files.values()) n += f.stream.unsyncedCount;
    return n;
  }

  /** Appends one record to the newest file (starting the next one when it is full). Not durable until `flush`. */
  async append(
    volume: string,
    lane: string,
    firstSeq: number,
    lastSeq: number,
    body: Uint8Array,
  ): Promise<SpillRecordInfo> {
    let f = this.files.get(this.current)!;
    if (f.stream.size >= this.rotateBytes) {
      const id = this.current + 1;
      const path = this.fileName(id);
      const { stream } = await SpillStream.open(this.layer, path, this.clock);
      f = { stream, path, live: new Set() };
      this.files.set(id, f);
      this.current = id;
    }
    const info = await f.stream.append(volume, lane, firstSeq, lastSeq, body);
    f.live.add(info.offset);
    return info;
  }

  /**
   * Syncs every file with unsynced records, racing `deadlineMs`: evidence for every record a
   * completed sync covered, or `deadline_missed` when any file missed it (its records stay unsynced).
   */
  async flush(deadlineMs: number): Promise<FlushResult> {
    const evidence = new Map<SpillRecordInfo, SpillEvidence>();
    let missed = false;
    for (const f of this.files.values()) {
      if (f.stream.unsyncedCount === 0) continue;
      const r = await f.stream.flush(deadlineMs);
      if (r.kind === "synced") for (const [k, v] of r.evidence) evidence.set(k, v);
      else missed = true;
    }
    if (missed) return { kind: "deadline_missed", deadlineMs, unsynced: this.unsyncedCount };
    return { kind: "synced", evidence };
  }

  /** Reads back a record named by its evidence (checksum verified). Throws SpillRecordError. */
  read(ev: SpillEvidence): Promise<{ info: SpillRecordInfo; body: Uint8Array }> {
    for (const f of this.files.values()) if (f.path === ev.file) return f.stream.read(ev.offset, ev.length);
    return Promise.reject(new SpillRecordError("spill record's file is gone", { file: ev.file, offset: ev.offset }));
  }

  /**
   * The record named by `ev` is no longer custody (released, transferred, or never adopted). A
   * file left with no live record, other than the newest, is closed and deleted.
   */
  async release(ev: SpillEvidence): Promise<void> {
    for (const [id, f] of this.files) {
      if (f.path !== ev.file) continue;
      f.live.delete(ev.offset);
      if (f.live.size > 0 || id === this.current) return;
      this.files.delete(id);
      await f.stream.close();
      await this.layer.unlink(f.path);
      await this.layer.syncDir(dirname(f.path));
      return;
    }
  }

  /** Closes every file. */
  async close(): Promise<void> {
    for (const f of this.files.values()) await f.stream.close();
  }
}
