import { dirname } from "node:path";
import { crc32 } from "node:zlib";
import type { Clock } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";
import type { FileHandleLike, FileLayer } from "../core/index.ts";

/**
 * Proof that bytes reached stable storage: produced only when `datasync()` on the spill file
 * completed (within the flush deadline) after the record was written — never by the write call or
 * by a schedule.
 */
export interface SpillEvidence {
  readonly file: string;
  /** Offset of the whole record in the file. */
  readonly offset: number;
  /** Length of the whole record (header, identities, body, checksum). */
  readonly length: number;
  /** Clock time at which the covering datasync completed (or reopen time for recovered records). */
  readonly syncedAt: number;
}

/** Identity of one spill record, as stored in its header. */
export interface SpillRecordInfo {
  readonly volume: string;
  readonly lane: string;
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly offset: number;
  readonly length: number;
}

/** Outcome of `flush`. A missed deadline is not persistence, even if the sync completes later. */
export type FlushResult =
  | { readonly kind: "synced"; readonly evidence: ReadonlyMap<SpillRecordInfo, SpillEvidence> }
  | { readonly kind: "deadline_missed"; readonly deadlineMs: number; readonly unsynced: number };

/** Thrown when reading back a record that fails its checksum or is not where the caller said. */
export class SpillRecordError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("spill_record", message, detail);
  }
}

// Record: "CSPL" u32 | version u8 | flags u8 | vol len u16 | lane len u16 | 0 u16 | first f64 |
//         last f64 | body len u32 | volume | lane | body | crc32 u32 (over everything before it)
const MAGIC = 0x4c505343;
const MAGIC_BYTES = Buffer.from([0x43, 0x53, 0x50, 0x4c]);
const VERSION = 1;
const HEADER = 32;
const MAX_BODY = 256 * 1024 * 1024;

interface Pending {
  readonly info: SpillRecordInfo;
  readonly written: Promise<void>;
}

/**
 * One sequential append file shared by many volumes and lanes. Records keep their volume, lane
 * and sequence range, length and crc32. `append` only writes; `flush` is the one place that can
 * produce persistence evidence. All I/O goes through the FileLayer seam; deadlines use the Clock.
 */
export class SpillStream {
  readonly path: string;
  private readonly fh: FileHandleLike;
  private readonly clock: Clock;
  private tail: number;
  private pending: Pending[] = [];

  private constructor(path: string, fh: FileHandleLike, clock: Clock, tail: number) {
    this.path = path;
    this.fh = fh;
    this.clock = clock;
    this.tail = tail;
  }

  /**
   * Opens (or creates) the spill file and scans it: every record with a good checksum is kept
   * (skipping damaged regions by searching for the next record magic), and anything after the last
   * good record — a torn tail — is truncated away and the truncation synced. Recovered records get
   * evidence stamped at reopen time: they are what survived.
   */
  static async open(
    files: FileLayer,
    path: string,
    clock: Clock,
  ): Promise<{
    stream: SpillStream;
    recovered: { info: SpillRecordInfo; evidence: SpillEvidence }[];
    droppedBytes: number;
  }> {
    const existed = await files.exists(path);
    const fh = await files.open(path, { create: true });
    // A new file's directory entry is durable only once its directory is synced: without this a
    // crash could take the whole stream, synced records and all.
    if (!existed) await files.syncDir(dirname(path));
    const size = await fh.size();
    const found = await scan(fh, size);
    const end = found.length === 0 ? 0 : found[found.length - 1]!.offset + found[found.length - 1]!.length;
    if (end < size) {
      await fh.truncate(end);
      await fh.datasync();
    }
    const syncedAt = clock.now();
    const recovered = found.map((info) => ({
      info,
      evidence: { file: path, offset: info.offset, length: info.length, syncedAt },
    }));
    return { stream: new SpillStream(path, fh, clock, end), recovered, droppedBytes: size - end };
  }

  /** Bytes written so far (the next record's offset). */
  get size(): number {
    return this.tail;
  }

  /** Records written but not yet covered by a completed, in-deadline sync. */
  get unsyncedCount(): number {
    return this.pending.length;
  }

  /**
   * Appends one record at the tail. Resolves when the write call completed — which is NOT
   * persistence; call `flush` for evidence. Offsets are assigned in call order.
   */
  append(volume: string, lane: string, firstSeq: number, lastSeq: number, body: Uint8Array): Promise<SpillRecordInfo> {
    const vol = Buffer.from(volume, "utf8");
    const ln = Buffer.from(lane, "utf8");
    const length = HEADER + vol.length + ln.length + body.length + 4;
    const rec = Buffer.allocUnsafe(length);
    rec.writeUInt32LE(MAGIC, 0);
    rec.writeUInt8(VERSION, 4);
    rec.writeUInt8(0, 5);
    rec.writeUInt16LE(vol.length, 6);
    rec.writeUInt16LE(ln.length, 8);
    rec.writeUInt16LE(0, 10);
    rec.writeDoubleLE(firstSeq, 12);
    rec.writeDoubleLE(lastSeq, 20);
    rec.writeUInt32LE(body.length, 28);
    let o = HEADER + vol.copy(rec, HEADER);
    o += ln.copy(rec, o);
    rec.set(body, o);
    o += body.length;
    rec.writeUInt32LE(crc32(rec.subarray(0, o)), o);
    const info: SpillRecordInfo = { volume, lane, firstSeq, lastSeq, offset: this.tail, length };
    this.tail += length;
    const written = this.fh.write(rec, 0, length, info.offset);
    this.pending.push({ info, written });
    return written.then(() => info);
  }

  /**
   * Waits for the writes issued so far, then `datasync()`s, racing `deadlineMs` on the Clock.
   * Completion in time yields evidence for each covered record; a missed deadline yields
   * `deadline_missed` and those records stay unsynced (a later flush covers them again).
   */
  async flush(deadlineMs: number): Promise<FlushResult> {
    const batch = this.pending;
    this.pending = [];
    let timer: unknown;
    const missed = new Promise<"missed">((resolve) => {
      timer = this.clock.setTimeout(() => resolve("missed"), deadlineMs);
    });
    // A record whose write failed never gets evidence and is not retried: its segment stays in RAM.
    let written = batch;
    const synced = (async () => {
      const settled = await Promise.allSettled(batch.map((p) => p.written));
      written = batch.filter((_, i) => settled[i]!.status === "fulfilled");
      await this.fh.datasync();
      return "synced" as const;
    })();
    let outcome: "synced" | "missed";
    try {
      outcome = await Promise.race([synced, missed]);
    } catch (err) {
      this.pending = written.concat(this.pending);
      throw err;
    } finally {
      this.clock.clearTimeout(timer);
    }
    if (outcome === "missed") {
      synced.catch(() => undefined); // a late failure changes nothing: it was never counted
      this.pending = batch.concat(this.pending);
      // Failed writes are pruned when the next flush settles them again.
      return { kind: "deadline_missed", deadlineMs, unsynced: this.pending.length };
    }
    const syncedAt = this.clock.now();
    const evidence = new Map<SpillRecordInfo, SpillEvidence>();
    for (const p of written)
      evidence.set(p.info, { file: this.path, offset: p.info.offset, length: p.info.length, syncedAt });
    return { kind: "synced", evidence };
  }

  /** Reads back the body of the record at `offset`/`length`, verifying its checksum. Throws SpillRecordError. */
  async read(offset: number, length: number): Promise<{ info: SpillRecordInfo; body: Uint8Array }> {
    const buf = Buffer.allocUnsafe(length);
    const n = await this.fh.read(buf, 0, length, offset);
    const parsed = n === length ? parseRecord(buf, 0, offset) : undefined;
    if (!parsed || parsed.info.length !== length)
      throw new SpillRecordError("spill record unreadable or corrupt", { offset, length });
    return parsed;
  }

  /** Closes the file. */
  async close(): Promise<void> {
    await Promise.allSettled(this.pending.map((p) => p.written));
    await this.fh.close();
  }
}

/** Parses one record at `at` in `buf`; undefined when it is incomplete or fails any check. */
function parseRecord(
  buf: Buffer,
  at: number,
  fileOffset: number,
): { info: SpillRecordInfo; body: Uint8Array } | undefined {
  if (buf.length - at < HEADER + 4) return undefined;
  if (buf.readUInt32LE(at) !== MAGIC || buf.readUInt8(at + 4) !== VERSION) return undefined;
  const volLen = buf.readUInt16LE(at + 6);
  const laneLen = buf.readUInt16LE(at + 8);
  const bodyLen = buf.readUInt32LE(at + 28);
  if (bodyLen > MAX_BODY) return undefined;
  const length = HEADER + volLen + laneLen + bodyLen + 4;
  if (buf.length - at < length) return undefined;
  if (buf.readUInt32LE(at + length - 4) !== crc32(buf.subarray(at, at + length - 4))) return undefined;
  const volume = buf.toString("utf8", at + HEADER, at + HEADER + volLen);
  const lane = buf.toString("utf8", at + HEADER + volLen, at + HEADER + volLen + laneLen);
  const bodyAt = at + HEADER + volLen + laneLen;
  return {
    info: {
      volume,
      lane,
      firstSeq: buf.readDoubleLE(at + 12),
      lastSeq: buf.readDoubleLE(at + 20),
      offset: fileOffset,
      length,
    },
    body: buf.subarray(bodyAt, bodyAt + bodyLen),
  };
}

/** Sequential scan of the file that keeps every intact record and resynchronises on the magic. */
async function scan(fh: FileHandleLike, size: number): Promise<SpillRecordInfo[]> {
  const out: SpillRecordInfo[] = [];
  let offset = 0;
  while (offset + HEADER + 4 <= size) {
    const head = Buffer.allocUnsafe(HEADER);
    await fh.read(head, 0, HEADER, offset);
    let rec: SpillRecordInfo | undefined;
    if (head.readUInt32LE(0) === MAGIC && head.readUInt32LE(28) <= MAX_BODY) {
      const length = HEADER + head.readUInt16LE(6) + head.readUInt16LE(8) + head.readUInt32LE(28) + 4;
      if (offset + length <= size) {
        const buf = Buffer.allocUnsafe(length);
        await fh.read(buf, 0, length, offset);
        rec = parseRecord(buf, 0, offset)?.info;
      }
    }
    if (rec) {
      out.push(rec);
      offset += rec.length;
      continue;
    }
    const next = await findMagic(fh, offset + 1, size);
    if (next < 0) break;
    offset = next;
  }
  return out;
}

async function findMagic(fh: FileHandleLike, from: number, size: number): Promise<number> {
  const CHUNK = 1 << 20;
  for (let at = from; at < size; at += CHUNK - 3) {
    const len = Math.min(CHUNK, size - at);
    const buf = Buffer.allocUnsafe(len);
    await fh.read(buf, 0, len, at);
    const i = buf.indexOf(MAGIC_BYTES);
    if (i >= 0) return at + i;
    if (len < CHUNK) break;
  }
  return -1;
}
