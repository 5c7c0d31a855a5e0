import { ControlConflictError, ControlLogRegressionCode, ControlLogRegressionError } from "./control-error.ts";
import {
  decodeControlEvent,
  encodeAppendableControlEvent,
  hashControlEventBytes,
  type ControlEvent,
} from "./control-event.ts";
import { isReadableEntry, type ControlLogEntry, type ControlLogRecord } from "./control-state.ts";
import { signEntryHash, type ControlSigner, type EntrySignature } from "./control-trust.ts";
import { snapshotRecordFromBytes } from "./control-snapshot.ts";

/**
 * Where a region's control events are committed, in order. Contract every implementation keeps
 * (in-memory here, JetStream in `transport/jetstream-control-log.ts`):
 * - `append` commits the event's canonical bytes only if the log's last sequence is still
 *   `expectedLastSeq`; otherwise it throws ControlConflictError and commits nothing. Of two
 *   appends prepared against the same sequence, exactly one succeeds.
 * - sequences are positive and strictly increasing (not necessarily contiguous);
 * - `readFrom(seq)` returns every stored entry with sequence >= seq, in order; an entry that
 *   cannot be decoded throws ControlLogRegressionError `unreadable_entry`.
 * The store does not check the hash chain or fencing: readers do (`foldControlLog`), so a log
 * that lost or reordered events is caught by whoever reads it.
 */
export interface ControlLogStore {
  readonly region: string;
  /**
   * Commits `event` after `expectedLastSeq`; resolves to its sequence once the store acknowledged
   * it. With `signer`, the entry carries the signer's signature of its hash (see control-trust.ts).
   */
  append(event: ControlEvent, expectedLastSeq: number, signer?: ControlSigner): Promise<number>;
  readAll(): Promise<ControlLogEntry[]>;
  readFrom(seq: number): Promise<ControlLogEntry[]>;
  /**
   * Like `readFrom`, but an entry that cannot be decoded comes back as an UnreadableControlEntry
   * instead of failing the read, so a reader with a trust root can skip it (`foldControlEntry`).
   */
  readRecordsFrom(seq: number): Promise<ControlLogRecord[]>;
  /** The last sequence the store reports (0 when empty). */
  lastSeq(): Promise<number>;
  /**
   * The highest sequence the store has seen arrive without asking anyone (a standing tail), or
   * undefined when it cannot tell. A reader compares it with what it folded to learn, for free,
   * that someone else (an operator, another controller) committed since.
   */
  seenHead?(): number | undefined;
  /**
   * Commits canonical snapshot bytes (`encodeControlSnapshot`) after `expectedLastSeq`, with the
   * same conflict rule as `append`; with `signer`, signed at its position like an entry. Stores that
   * cannot be compacted leave it out (control-compaction.ts).
   */
  appendSnapshot?(snapshot: Uint8Array, expectedLastSeq: number, signer?: ControlSigner): Promise<number>;
  /**
   * Removes every entry below `seq` (the position of a snapshot the caller verified); resolves to
   * how many were removed. The caller must have verified the snapshot at `seq` first.
   */
  purgeBelow?(seq: number): Promise<number>;
}

/** Decodes one stored snapshot, or names why it is unreadable (see control-snapshot.ts). */
export function snapshotRecordOf(seq: number, bytes: Uint8Array, signature?: EntrySignature): ControlLogRecord {
  try {
    return snapshotRecordFromBytes(seq, bytes, signature);
  } catch (err) {
    return unreadableRecord(
      seq,
      bytes,
      `control log entry ${seq} is not a snapshot: ${(err as Error).message.slice(0, 200)}`,
    );
  }
}

/** Decodes one stored entry, or names why it is unreadable (see `ControlLogStore.readRecordsFrom`). */
export function recordFromBytes(seq: number, bytes: Uint8Array, signature?: EntrySignature): ControlLogRecord {
  try {
    return entryFromBytes(seq, bytes, signature);
  } catch (err) {
    return unreadableRecord(seq, bytes, (err as Error).message);
  }
}

/** The record of stored bytes at `seq` that are not a control event (`why`). */
export function unreadableRecord(seq: number, bytes: Uint8Array, why: string): ControlLogRecord {
  return { seq, hash: hashControlEventBytes(bytes), unreadable: why };
}

/** Decodes one stored entry; an undecodable one makes the log untrustworthy for this reader. */
export function entryFromBytes(seq: number, bytes: Uint8Array, signature?: EntrySignature): ControlLogEntry {
  try {
    const entry = { seq, event: decodeControlEvent(bytes), hash: hashControlEventBytes(bytes) };
    return signature === undefined ? entry : { ...entry, signature };
  } catch (err) {
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.unreadable_entry,
      `control log entry ${seq} cannot be decoded: ${(err as Error).message}`,
      { seq },
    );
  }
}

/**
 * An in-memory ControlLogStore for tests and the simulator. Appends are atomic with respect to
 * each other (single-threaded JS), so the conflict semantics match JetStream's expected-last-
 * sequence check. `loseTail` injects the failure the hash chain exists to catch.
 */
export class InMemoryControlLog implements ControlLogStore {
  // `decoded` caches the entry the bytes decode to: stored entries never change, and every actor
  // of a simulated world follows this one log, so each entry is decoded once, not once per read.
  private entries: {
    seq: number;
    bytes: Uint8Array;
    signature?: EntrySignature;
    snapshot?: true;
    decoded?: ControlLogRecord;
  }[] = [];
  private nextSeq = 1;

  constructor(readonly region: string) {}

  async append(event: ControlEvent, expectedLastSeq: number, signer?: ControlSigner): Promise<number> {
    const bytes = encodeAppendableControlEvent(event);
    return this.store(bytes, expectedLastSeq, signer);
  }

  async appendSnapshot(snapshot: Uint8Array, expectedLastSeq: number, signer?: ControlSigner): Promise<number> {
    return this.store(snapshot, expectedLastSeq, signer, true);
  }

  async purgeBelow(seq: number): Promise<number> {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => e.seq >= seq);
    return before - this.entries.length;
  }

  /** Stores bytes (a snapshot's or an event's) after `expectedLastSeq`, or throws ControlConflictError. */
  private store(
    bytes: Uint8Array,
    expectedLastSeq: number,
    signer: ControlSigner | undefined,
    snapshot?: true,
  ): number {
    const last = this.last();
    if (last !== expectedLastSeq) {
      throw new ControlConflictError(`control log ${this.region} is at ${last}, not ${expectedLastSeq}`, {
        expectedLastSeq,
        actualLastSeq: last,
        region: this.region,
      });
    }
    const seq = this.nextSeq++;
    const signature = signer === undefined ? undefined : signEntryHash(hashControlEventBytes(bytes), seq, signer);
    this.entries.push({
      seq,
      bytes,
      ...(signature === undefined ? {} : { signature }),
      ...(snapshot ? { snapshot } : {}),
    });
    return seq;
  }

  async readAll(): Promise<ControlLogEntry[]> {
    return this.readFrom(1);
  }

  async readFrom(seq: number): Promise<ControlLogEntry[]> {
    // Events only: a snapshot is not an event (readers that fold read records).
    return this.entries
      .slice(this.indexOf(seq))
      .filter((e) => !e.snapshot)
      .map((e) =>
        e.decoded !== undefined && isReadableEntry(e.decoded)
          ? e.decoded
          : (e.decoded = entryFromBytes(e.seq, e.bytes, e.signature)),
      );
  }

  async readRecordsFrom(seq: number): Promise<ControlLogRecord[]> {
    return this.entries
      .slice(this.indexOf(seq))
      .map(
        (e) =>
          (e.decoded ??= e.snapshot
            ? snapshotRecordOf(e.seq, e.bytes, e.signature)
            : recordFromBytes(e.seq, e.bytes, e.signature)),
      );
  }

  async lastSeq(): Promise<number> {
    return this.last();
  }

  /**
   * Fault injection: forgets the last `n` committed events and reuses their sequences, as a
   * store that acknowledged writes it had not made durable would after a crash.
   */
  loseTail(n: number): void {
    this.entries = this.entries.slice(0, Math.max(0, this.entries.length - n));
    this.nextSeq = this.last() + 1;
  }

  /**
   * Index of the first entry >= seq, by bisection (sequences ascend), so a reader that keeps up pays for what is new
   * only.
   */
  private indexOf(seq: number): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private last(): number {
    return this.entries[this.entries.length - 1]?.seq ?? 0;
  }
}
