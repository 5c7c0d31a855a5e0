import type { FileHandleLike } from "../core/index.ts";
import { RECORD_SIZE } from "./format.ts";
import { decodeRecord, encodeRecord, type WalRecord } from "./wal-record.ts";

/**
 * The WAL ring: `capacity` fixed-size slots, record with LSN n lives in slot (n - 1) mod capacity.
 * Slots of LSNs at or below the durable checkpoint's LSN may be overwritten; the ring never
 * overwrites a record the durable checkpoint still needs (callers check `freeSlots()` first).
 */
export class WalRing {
  /** LSN of the newest appended record (0 when none). */
  head: number;
  /** LSN covered by the durable checkpoint: slots of LSNs ≤ this are reusable. */
  checkpointLsn: number;
  /** Records appended (for WAL bytes per write accounting). */
  bytesWritten = 0;

  constructor(
    private readonly file: FileHandleLike,
    readonly capacity: number,
    readonly slotSize: number,
    head: number,
    checkpointLsn: number,
  ) {
    this.head = head;
    this.checkpointLsn = checkpointLsn;
  }

  /** Slot index of an LSN. */
  slotOf(lsn: number): number {
    return (lsn - 1) % this.capacity;
  }

  /** Slots that can take new records without overwriting anything the checkpoint needs. */
  freeSlots(): number {
    return this.capacity - (this.head - this.checkpointLsn);
  }

  /**
   * Writes `records` (LSNs head+1, head+2, … in order) into their slots with one pwrite per
   * contiguous span (two when the span wraps). Not durable until `sync()`. Throws RangeError when
   * LSNs are not consecutive or the ring lacks room: that is a caller bug, never input.
   */
  async append(records: readonly WalRecord[]): Promise<void> {
    if (records.length === 0) return;
    if (records.length > this.freeSlots()) throw new RangeError("WAL ring overflow");
    const buf = new Uint8Array(records.length * this.slotSize);
    records.forEach((r, i) => {
      if (r.lsn !== this.head + 1 + i) throw new RangeError(`non-consecutive LSN ${r.lsn}`);
      encodeRecord(r, buf.subarray(i * this.slotSize, (i + 1) * this.slotSize));
    });
    const firstSlot = this.slotOf(records[0]!.lsn);
    const inFirst = Math.min(records.length, this.capacity - firstSlot);
    const writes = [this.file.write(buf, 0, inFirst * this.slotSize, firstSlot * this.slotSize)];
    if (inFirst < records.length)
      writes.push(this.file.write(buf, inFirst * this.slotSize, (records.length - inFirst) * this.slotSize, 0));
    await Promise.all(writes);
    this.head += records.length;
    this.bytesWritten += buf.length;
  }

  /** fdatasync of the ring: every appended record becomes durable. */
  async sync(): Promise<void> {
    await this.file.datasync();
  }

  /** Reads `count` slots starting at slot `first` (no wrap) into one buffer; short reads are zero-filled. */
  async readSlots(first: number, count: number): Promise<Uint8Array> {
    const buf = new Uint8Array(count * this.slotSize);
    await this.file.read(buf, 0, buf.length, first * this.slotSize);
    return buf;
  }

  /**
   * Reads the records with LSNs first..last (all inside the window checkpointLsn+1..head) back from
   * the ring file, payloads included. Returns the LSNs whose slot does not hold that record
   * (damage) in `unreadable` instead of throwing; only I/O errors throw.
   */
  async readRecords(first: number, last: number): Promise<{ records: WalRecord[]; unreadable: number[] }> {
    const records: WalRecord[] = [];
    const unreadable: number[] = [];
    for (let lsn = first; lsn <= last;) {
      const slot = this.slotOf(lsn);
      const n = Math.min(last - lsn + 1, this.capacity - slot, 4096);
      const buf = await this.readSlots(slot, n);
      for (let k = 0; k < n; k++, lsn++) {
        const r = decodeRecord(buf.subarray(k * this.slotSize, (k + 1) * this.slotSize));
        if (typeof r === "string" || r.lsn !== lsn) unreadable.push(lsn);
        else records.push(r);
      }
    }
    return { records, unreadable };
  }

  /** Overwrites the given slots with zeros (used at mount to erase records past the recovered end). */
  async eraseSlots(slots: readonly number[]): Promise<void> {
    const zero = new Uint8Array(Math.max(RECORD_SIZE, this.slotSize));
    await Promise.all(slots.map((s) => this.file.write(zero, 0, this.slotSize, s * this.slotSize)));
  }
}
