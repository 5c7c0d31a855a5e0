import {
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CustodyError } from "../core/index.ts";
import { ControlConflictError, ControlLogRegressionCode, ControlLogRegressionError } from "../custody/index.ts";
import { encodeAppendableControlEvent, hashControlEventBytes, type ControlEvent } from "../custody/index.ts";
import { signEntryHash, type ControlSigner } from "../custody/index.ts";
import { isReadableEntry, recordFromBytes, unreadableRecord, type ControlLogStore } from "../custody/index.ts";
import type { ControlLogEntry, ControlLogRecord } from "../custody/index.ts";
import { controlEventSpec, controlSnapshotSpec, isSnapshotRecord, snapshotRecordOf } from "../custody/index.ts";
import { ControlLogTail } from "./control-log-tail.ts";
import { retryWhileUnavailable } from "./control-log-unavailable.ts";
import { openNamingFailure } from "./control-log-unreachable.ts";
import { ctrlSubject } from "./protocol/index.ts";
import { decodeMessage, encodeMessage } from "./protocol/index.ts";

/** Options of `openJetStreamControlLog`. */
export interface JetStreamControlLogOptions {
  /** Region token; the stream captures `custody.v1.ctrl.<region>`. */
  readonly region: string;
  /** Stream name; default `CUSTODY_CTRL_<region>` (characters outside [A-Za-z0-9_-] become `_`). */
  readonly streamName?: string;
  /** JetStream replicas (1 for a single server, 3 or 5 for a cluster). Default 1. */
  readonly replicas?: number;
  /** Publish-ack / API timeout in ms. Default 5000. */
  readonly timeoutMs?: number;
  /**
   * The JetStream cluster the stream is created on (`placement.cluster`; `initJetStreamControlLog`
   * only): a replicated log's own cluster, reached through the gateways. Default: the cluster of
   * the server the bootstrap is connected to.
   */
  readonly placementCluster?: string;
  /**
   * How long an append or a read keeps trying while the stream has no leader (ms): a replicated
   * log elects a new one within seconds of losing its leader's server. Default 30000 for a stream
   * with more than one replica, 0 (one try, as a single server has no one to fail over to) otherwise.
   */
  readonly failoverMs?: number;
}

/**
 * Default of `failoverMs`: generous beside a 2.9 stream leader election (seconds), bounded so a lost log is still
 * reported.
 */
const FAILOVER_MS = 30_000;

/** The default stream name of a region's control log. */
export function controlStreamName(region: string): string {
  return `CUSTODY_CTRL_${region.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

/**
 * Thrown by `openJetStreamControlLog` when the region's control stream does not exist: it was
 * never bootstrapped, or it vanished. Readers never create it (an empty stream in place of a
 * lost one would look like a fresh log); only `initJetStreamControlLog` does.
 */
export class ControlLogMissingError extends CustodyError {
  constructor(region: string, streamName: string, options?: { cause?: unknown }) {
    super(
      "control_log_missing",
      `control log ${region}: stream ${streamName} does not exist (bootstrap it with \`custody log init\`; if it ` +
        `existed before, it vanished)`,
      { region, streamName },
      options,
    );
  }
}

/**
 * Thrown by `initJetStreamControlLog` when the stream exists with fewer or more replicas, or on
 * another cluster, than asked (e.g. created with one replica before the deployment had a control
 * cluster): nothing is changed; the operator moves or re-creates it knowingly.
 */
export class ControlLogPlacementError extends CustodyError {
  constructor(
    region: string,
    streamName: string,
    want: { replicas?: number | undefined; cluster?: string | undefined },
    have: { replicas: number; cluster?: string | undefined },
  ) {
    super(
      "control_log_placement",
      `control log ${region}: stream ${streamName} exists with ${have.replicas} replica(s) on cluster ` +
        (`${have.cluster ?? "(none)"}, not ${want.replicas ?? have.replicas} on ` +
          `${want.cluster ?? have.cluster ?? "(none)"}`),
      { region, streamName, want, have },
    );
  }
}

/** The configuration every control stream has: file storage, nothing ever discarded, deleted or purged. */
function controlStreamConfig(name: string, subject: string, replicas: number, cluster: string | undefined) {
  return {
    ...(cluster !== undefined ? { placement: { cluster, tags: [] } } : {}),
    name,
    subjects: [subject],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.New,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    num_replicas: replicas,
    // Nothing may remove one committed control event through the API. A purge is allowed (below a
    // verified snapshot: control-compaction.ts), and only the operator holds the purge API
    // (transport/security/principal-permissions.ts); no roll-up headers, so a publisher cannot purge.
    deny_delete: true,
    deny_purge: false,
    allow_rollup_hdrs: false,
  };
}

/**
 * The explicit bootstrap of a region's control log (`custody log init`): creates the stream
 * unless it exists (with `replicas`, on `placementCluster`), then opens it. An existing stream with
 * other replicas or on another cluster than asked is ControlLogPlacementError. Needs the right to create streams (the
 * operator's). Returns
 * `created: false` when the stream was already there. Throws ControlLogUnreachableError (naming
 * the server, with the nats.js error as its cause) when JetStream is unavailable or an existing
 * stream has an incompatible configuration.
 */
export async function initJetStreamControlLog(
  nc: NatsConnection,
  opts: JetStreamControlLogOptions,
): Promise<{ log: JetStreamControlLog; created: boolean }> {
  const timeout = opts.timeoutMs ?? 5_000;
  const name = opts.streamName ?? controlStreamName(opts.region);
  return openNamingFailure(nc, opts.region, name, timeout, () => initStream(nc, opts, name, timeout));
}

async function initStream(
  nc: NatsConnection,
  opts: JetStreamControlLogOptions,
  name: string,
  timeout: number,
): Promise<{ log: JetStreamControlLog; created: boolean }> {
  const jsm = await jetstreamManager(nc, { timeout });
  let created = false;
  try {
    const info = await jsm.streams.info(name);
    // An existing stream is never moved or re-replicated here: asked for another placement, say so.
    const have = { replicas: info.config.num_replicas, cluster: info.cluster?.name };
    if (
      (opts.replicas !== undefined && opts.replicas !== have.replicas) ||
      (opts.placementCluster !== undefined && opts.placementCluster !== have.cluster)
    ) {
      throw new ControlLogPlacementError(
        opts.region,
        name,
        { replicas: opts.replicas, cluster: opts.placementCluster },
        have,
      );
    }
  } catch (err) {
    if (err instanceof ControlLogPlacementError) throw err;
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
    await jsm.streams.add(
      controlStreamConfig(name, ctrlSubject(opts.region), opts.replicas ?? 1, opts.placementCluster),
    );
    created = true;
  }
  return { log: await openJetStreamControlLog(nc, opts), created };
}

/**
 * Opens an existing region's control log on JetStream. Never creates it: throws
 * ControlLogMissingError when the stream does not exist, and ControlLogUnreachableError (naming
 * the server, with the nats.js error as its cause) when JetStream is unavailable.
 */
export async function openJetStreamControlLog(
  nc: NatsConnection,
  opts: JetStreamControlLogOptions,
): Promise<JetStreamControlLog> {
  const timeout = opts.timeoutMs ?? 5_000;
  const name = opts.streamName ?? controlStreamName(opts.region);
  return openNamingFailure(nc, opts.region, name, timeout, () => openStream(nc, opts, name, timeout));
}

async function openStream(
  nc: NatsConnection,
  opts: JetStreamControlLogOptions,
  name: string,
  timeout: number,
): Promise<JetStreamControlLog> {
  const jsm = await jetstreamManager(nc, { timeout });
  const subject = ctrlSubject(opts.region);
  let replicas: number;
  try {
    replicas = (await retryWhileUnavailable(opts.failoverMs ?? 0, () => jsm.streams.info(name))).config.num_replicas;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)
      throw new ControlLogMissingError(opts.region, name, { cause: err });
    throw err;
  }
  return new JetStreamControlLog(
    nc,
    jsm,
    jetstream(nc, { timeout }),
    opts.region,
    name,
    subject,
    timeout,
    opts.failoverMs ?? (replicas > 1 ? FAILOVER_MS : 0),
  );
}

/**
 * Thrown by `appendSnapshot` on a control stream created with `deny_purge` (before compaction
 * existed): nats-server 2.9 cannot lift that flag, so such a log cannot be compacted in place.
 */
export class ControlLogPurgeDeniedError extends CustodyError {
  constructor(region: string, streamName: string) {
    super(
      "control_log_purge_denied",
      `control log ${region}: stream ${streamName} denies purges (created before compaction); it cannot be ` +
        `compacted in place`,
      { region, streamName },
    );
  }
}

/** How often a reader served by the tail still asks the stream for its last sequence (ms). */
const VERIFY_EVERY_MS = 2_000;

/**
 * ControlLogStore on a JetStream stream. `append` publishes with the expected-last-sequence
 * expectation (`Nats-Expected-Last-Sequence`), so the server commits it only on top of the entry
 * the controller folded; a lost race surfaces as ControlConflictError. Reads create nothing on
 * the server (no consumer: see docs/security.md): entries are read by sequence with
 * `$JS.API.STREAM.MSG.GET`. They are served by one standing tail (ControlLogTail: a subscription
 * on the control subject, then reads of the entries after the newest held) started by the first
 * read; a read it cannot serve (too old, or the tail saw something it cannot trust) is a one-off
 * read of the range, after which the tail starts again. Every VERIFY_EVERY_MS, and after a conflict, a read also asks
 * the
 * stream for its last sequence, so entries another controller committed are waited for and a
 * stream that went backwards is seen.
 *
 * Durability caveat: the publish ack means the server stored the message, not that it was
 * fsynced (JetStream syncs file storage on its own timer), so a crash can lose acknowledged
 * events. The hash chain and `ControlLogFollower` exist to detect exactly that: a reader that saw
 * the lost head refuses the shorter log.
 */
export class JetStreamControlLog implements ControlLogStore {
  #tail: ControlLogTail | undefined;
  /** Highest sequence this store appended itself (a read must include it). */
  #appended = 0;
  #verifyAt = 0;
  /** The stream's last sequence when it was last asked. */
  #reportedLast = 0;
  #closed = false;
  /** JetStream API requests made by reads (stream info, entry reads): what the tail saves. */
  apiRequests = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    readonly region: string,
    readonly streamName: string,
    readonly subject: string,
    private readonly timeoutMs: number,
    private readonly failoverMs: number = 0,
  ) {}

  async append(event: ControlEvent, expectedLastSeq: number, signer?: ControlSigner): Promise<number> {
    const bytes = encodeAppendableControlEvent(event);
    const data = encodeMessage(
      controlEventSpec,
      signer === undefined
        ? { event: bytes }
        : { event: bytes, ...signEntryHash(hashControlEventBytes(bytes), expectedLastSeq + 1, signer) },
    );
    // Two events prepared on the same head share this id, so even on a server that ignores an
    // expected last sequence of 0 (empty stream) only one of them is stored (duplicate window).
    return this.publishAt(
      data,
      expectedLastSeq,
      `${this.region}-${expectedLastSeq + 1}-${event.prevHash.slice(0, 16)}`,
    );
  }

  /**
   * Publishes `data` to be stored right after `expectedLastSeq`; a lost race is ControlConflictError.
   * While a replicated log elects a new leader the publish times out or finds no responders: it is
   * sent again (same id) within `failoverMs`. A try that timed out may have been stored, so a later
   * try told "duplicate" or "moved past" checks whether the entry there is this one.
   */
  private async publishAt(data: Uint8Array, expectedLastSeq: number, msgID: string): Promise<number> {
    let retried = false;
    try {
      const ack = await retryWhileUnavailable(this.failoverMs, async (n) => {
        retried = n > 1;
        return await this.js.publish(this.subject, data, {
          expect: { lastSequence: expectedLastSeq, streamName: this.streamName },
          msgID,
          timeout: this.timeoutMs,
        });
      });
      if (ack.duplicate && retried && (await this.storedIs(ack.seq, data))) {
        this.#appended = Math.max(this.#appended, ack.seq);
        return ack.seq;
      }
      if (ack.duplicate) {
        this.#verifyAt = 0;
        throw new ControlConflictError(
          `control log ${this.region}: an event for position ${expectedLastSeq + 1} was already committed`,
          { expectedLastSeq, region: this.region },
        );
      }
      this.#appended = Math.max(this.#appended, ack.seq);
      return ack.seq;
    } catch (err) {
      if (
        err instanceof JetStreamApiError &&
        (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
          err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
      ) {
        if (retried && (await this.storedIs(expectedLastSeq + 1, data))) {
          this.#appended = Math.max(this.#appended, expectedLastSeq + 1);
          return expectedLastSeq + 1;
        }
        // Someone else committed: the next read asks the stream how far it goes.
        this.#verifyAt = 0;
        throw new ControlConflictError(
          `control log ${this.region} moved past ${expectedLastSeq}: ${err.message}`,
          { expectedLastSeq, region: this.region },
          { cause: err },
        );
      }
      throw err;
    }
  }

  /** Whether the stream holds exactly `data` at `seq` (a retried append finding its own earlier try). */
  private async storedIs(seq: number, data: Uint8Array): Promise<boolean> {
    const m = await retryWhileUnavailable(this.failoverMs, () => this.jsm.streams.getMessage(this.streamName, { seq }));
    return m !== null && Buffer.from(m.data).equals(Buffer.from(data));
  }

  /**
   * Commits a snapshot (control-snapshot.ts) after `expectedLastSeq`, like `append`. Refused with
   * ControlLogPurgeDeniedError, before anything is committed, on a stream that may never be purged
   * (created `deny_purge` before compaction existed: nats-server cannot lift that flag).
   */
  async appendSnapshot(snapshot: Uint8Array, expectedLastSeq: number, signer?: ControlSigner): Promise<number> {
    if ((await this.info()).config.deny_purge) throw new ControlLogPurgeDeniedError(this.region, this.streamName);
    const data = encodeMessage(
      controlSnapshotSpec,
      signer === undefined
        ? { snapshot }
        : { snapshot, ...signEntryHash(hashControlEventBytes(snapshot), expectedLastSeq + 1, signer) },
    );
    return this.publishAt(data, expectedLastSeq, `${this.region}-${expectedLastSeq + 1}-snapshot`);
  }

  /** Purges every entry below `seq` (`$JS.API.STREAM.PURGE` with `seq`: the operator's right alone). */
  async purgeBelow(seq: number): Promise<number> {
    return (await this.jsm.streams.purge(this.streamName, { seq })).purged;
  }

  async readAll(): Promise<ControlLogEntry[]> {
    return this.readFrom(1);
  }

  async readFrom(seq: number): Promise<ControlLogEntry[]> {
    // The strict read of events: the first entry that does not decode fails it (readers without a
    // trust root); snapshots are not events and are left out (readers that fold read records).
    return (await this.readRecordsFrom(seq)).flatMap((r) => {
      if (isReadableEntry(r)) return [r];
      if (isSnapshotRecord(r)) return [];
      throw new ControlLogRegressionError(ControlLogRegressionCode.unreadable_entry, r.unreadable, { seq: r.seq });
    });
  }

  async readRecordsFrom(seq: number): Promise<ControlLogRecord[]> {
    const tail = this.#tail;
    if (tail !== undefined && tail.holdsFrom(seq)) {
      if (Date.now() >= this.#verifyAt) {
        await this.lastSeq();
        this.#verifyAt = Date.now() + VERIFY_EVERY_MS;
      }
      // lastSeq drops a tail that holds more than the stream: a fresh read shows the follower the truth.
      if (this.#tail === tail) {
        // What this store appended and the last sequence the stream reported (here or by a caller of lastSeq) must be
        // in the read.
        const target = Math.max(tail.head, this.#appended, this.#reportedLast);
        if (await tail.waitFor(target, this.timeoutMs)) return tail.from(seq);
        await this.dropTail(tail);
      }
    }
    const { entries, last } = await this.readOnce(seq);
    if (!this.#closed) await this.startTail(last + 1, entries);
    return entries;
  }

  seenHead(): number | undefined {
    return this.#tail?.failure === undefined ? this.#tail?.head : undefined;
  }

  async lastSeq(): Promise<number> {
    this.apiRequests++;
    return this.noteLast((await this.info()).state.last_seq);
  }

  /** Remembers the stream's last sequence as reported now; a tail holding more than that is dropped. */
  private noteLast(last: number): number {
    this.#reportedLast = last;
    const tail = this.#tail;
    if (tail !== undefined && last < tail.head) void this.dropTail(tail);
    return last;
  }

  /** The stream's info; a stream that vanished since it was opened is ControlLogMissingError. */
  private async info() {
    try {
      return await retryWhileUnavailable(this.failoverMs, () => this.jsm.streams.info(this.streamName));
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)
        throw new ControlLogMissingError(this.region, this.streamName, { cause: err });
      throw err;
    }
  }

  /** Stops the standing tail (reads after this are one-off reads). */
  async close(): Promise<void> {
    this.#closed = true;
    const t = this.#tail;
    this.#tail = undefined;
    await t?.close();
  }

  private async startTail(startSeq: number, seed: readonly ControlLogRecord[]): Promise<void> {
    // Only a contiguous run that ends right before startSeq can seed the tail.
    const contiguous =
      seed.length > 0 &&
      seed[seed.length - 1]!.seq === startSeq - 1 &&
      seed[seed.length - 1]!.seq - seed[0]!.seq === seed.length - 1;
    try {
      const tail = await ControlLogTail.start(
        this.nc,
        this.jsm,
        this.streamName,
        this.subject,
        startSeq,
        contiguous ? seed : [],
        (s, data) => recordOf(s, data),
        () => this.apiRequests++,
      );
      const old = this.#tail;
      this.#tail = tail;
      this.#verifyAt = Date.now() + VERIFY_EVERY_MS;
      if (old !== undefined) await old.close();
      if (this.#closed) await this.close();
    } catch {
      // No tail for now: reads stay one-off until one starts.
    }
  }

  private async dropTail(tail: ControlLogTail): Promise<void> {
    if (this.#tail === tail) this.#tail = undefined;
    await tail.close();
  }

  /**
   * One read of the entries from `seq` to the stream's current last sequence, by sequence
   * (READ_PARALLEL requests in flight). A sequence the stream no longer holds is skipped, as a
   * consumer would skip it; the follower sees the gap.
   */
  private async readOnce(seq: number): Promise<{ entries: ControlLogRecord[]; last: number }> {
    this.apiRequests++;
    const info = await this.info();
    const last = this.noteLast(info.state.last_seq);
    const from = Math.max(seq, info.state.first_seq, 1);
    if (info.state.messages === 0 || from > last) return { entries: [], last };
    const out: ControlLogRecord[] = [];
    for (let start = from; start <= last; start += READ_PARALLEL) {
      const seqs = Array.from({ length: Math.min(READ_PARALLEL, last - start + 1) }, (_, i) => start + i);
      this.apiRequests += seqs.length;
      const got = await Promise.all(
        seqs.map((s) =>
          retryWhileUnavailable(this.failoverMs, () => this.jsm.streams.getMessage(this.streamName, { seq: s })),
        ),
      );
      for (const m of got) if (m !== null) out.push(recordOf(m.seq, m.data));
    }
    return { entries: out, last: Math.max(last, out[out.length - 1]?.seq ?? 0) };
  }
}

/** Entry reads a one-off read keeps in flight at once. */
const READ_PARALLEL = 64;

/**
 * The entry a stored message holds: its canonical event bytes and, in a signed log, their
 * signature; or, for a message that is not a control event or does not decode, an unreadable record.
 */
function recordOf(seq: number, data: Uint8Array): ControlLogRecord {
  let m: ReturnType<typeof unwrap>;
  try {
    m = unwrap(seq, data);
  } catch (err) {
    return snapshotOf(seq, data) ?? unreadableRecord(seq, data, (err as Error).message);
  }
  return recordFromBytes(
    seq,
    m.event,
    m.signer !== undefined && m.signature !== undefined ? { signer: m.signer, signature: m.signature } : undefined,
  );
}

/** The control-snapshot message stored at `seq`, or undefined when `data` is not one. */
function snapshotOf(seq: number, data: Uint8Array): ControlLogRecord | undefined {
  let m;
  try {
    m = decodeMessage(controlSnapshotSpec, data);
  } catch {
    return undefined;
  }
  return snapshotRecordOf(
    seq,
    m.snapshot,
    m.signer !== undefined && m.signature !== undefined ? { signer: m.signer, signature: m.signature } : undefined,
  );
}

/** The control-event message stored at `seq`; anything else makes the entry unreadable. */
function unwrap(
  seq: number,
  data: Uint8Array,
): { event: Uint8Array; signer?: string | undefined; signature?: Uint8Array | undefined } {
  try {
    return decodeMessage(controlEventSpec, data);
  } catch (err) {
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.unreadable_entry,
      `control log entry ${seq} is not a control-event message: ${(err as Error).message}`,
      { seq },
    );
  }
}
