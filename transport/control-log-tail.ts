import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { ControlLogRecord } from "../custody/index.ts";

/**
 * Waits between pulls that found nothing new after a wake-up (ms): the control subject's message
 * can reach a subscriber before the stream stored it, and a publish the stream refused (a lost
 * expected-last-sequence race) wakes readers too. A few short retries, then the next message.
 */
const RETRY_MS = [5, 25, 100] as const;

/**
 * The server's advisories about stream `stream` (created, updated, deleted, and in a cluster a new
 * leader or a lost quorum): a tail that sees any stops trusting what it holds, since the stream it
 * reads by sequence may not be the one it read. The cost of a false alarm is one fresh read.
 */
export function streamAdvisorySubject(stream: string): string {
  return `$JS.EVENT.ADVISORY.STREAM.*.${stream}`;
}

/**
 * The standing reader of a control-log stream, started once and kept, that creates nothing on the
 * server: a plain subscription on the control subject says an entry was (probably) committed, and
 * the entries are read by sequence (`$JS.API.STREAM.MSG.GET`), each the one after the newest held.
 * So a reader needs no consumer, and no role but the operator may create one (docs/security.md: a
 * push consumer's deliver subject is beyond what nats-server 2.9 permissions can restrict).
 *
 * It keeps the newest `keep` entries; a reader asking for anything older, or a tail that saw
 * something it cannot trust (a sequence not the next one, an entry that does not decode, a failed
 * read, a subscription the server closed, any advisory about the stream: deleted, recreated,
 * updated, a new leader), falls back to a one-off read — the tail never hides a
 * regression from the follower that checks for one.
 */
export class ControlLogTail {
  /** Contiguous, ascending entries, the newest `keep` received. */
  private entries: ControlLogRecord[] = [];
  private highest: number;
  private broken: string | undefined;
  private waiters: { seq: number; wake: () => void }[] = [];
  private subscriptions: Subscription[] = [];
  private pulling: Promise<void> | undefined;
  private wokenAgain = false;
  private retry: { timer: NodeJS.Timeout; done: () => void } | undefined;

  private constructor(
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    /** Entries the caller already read (ascending, contiguous), the tail continues after them. */
    seed: readonly ControlLogRecord[],
    startSeq: number,
    private readonly keep: number,
    private readonly decode: (seq: number, data: Uint8Array) => ControlLogRecord,
    /** Counts each JetStream API request the tail makes. */
    private readonly onRequest: () => void,
  ) {
    this.entries = seed.slice(-keep);
    this.highest = startSeq - 1;
  }

  /**
   * Starts a tail holding entries from `startSeq` on; `seed` are the entries just before it;
   * `decode` turns a stored message into an entry (throwing when it cannot). The subscription is
   * in place before the first pull, so nothing committed after the pull's last entry is missed.
   */
  static async start(
    nc: NatsConnection,
    jsm: JetStreamManager,
    stream: string,
    subject: string,
    startSeq: number,
    seed: readonly ControlLogRecord[],
    decode: (seq: number, data: Uint8Array) => ControlLogRecord,
    onRequest: () => void = () => undefined,
    keep = 1024,
  ): Promise<ControlLogTail> {
    const tail = new ControlLogTail(jsm, stream, seed, startSeq, keep, decode, onRequest);
    const sub = nc.subscribe(subject, {
      callback: (err) => (err ? tail.break(`subscription failed: ${err.message}`) : tail.wake()),
    });
    const advisories = nc.subscribe(streamAdvisorySubject(stream), {
      callback: (err, m) =>
        tail.break(err ? `advisory subscription failed: ${err.message}` : `stream advisory ${m.subject}`),
    });
    tail.subscriptions = [sub, advisories];
    for (const s of tail.subscriptions) {
      void s.closed.then(
        () => tail.break("subscription closed"),
        (err: unknown) => tail.break(`subscription failed: ${(err as Error).message}`),
      );
    }
    await nc.flush();
    await tail.pull(false);
    if (tail.broken !== undefined) {
      const why = tail.broken;
      await tail.close();
      throw new Error(`control log tail did not start: ${why}`);
    }
    return tail;
  }

  /** Why the tail cannot be trusted any more (undefined while it can). */
  get failure(): string | undefined {
    return this.broken;
  }

  /** Highest sequence received. */
  get head(): number {
    return this.highest;
  }

  /** True when the tail still holds every entry from `seq` on (a read from there needs no API call). */
  holdsFrom(seq: number): boolean {
    if (this.broken !== undefined) return false;
    const first = this.entries[0]?.seq ?? this.highest + 1;
    return seq >= first;
  }

  /** Entries with sequence >= `seq` (call only when `holdsFrom(seq)`). */
  from(seq: number): ControlLogRecord[] {
    const i = this.entries.findIndex((e) => e.seq >= seq);
    return i < 0 ? [] : this.entries.slice(i);
  }

  /**
   * Resolves true once the tail holds `seq`, false after `timeoutMs` or when it breaks. The caller
   * knows `seq` was committed (it appended it, or the stream said so), so the tail reads it now.
   */
  async waitFor(seq: number, timeoutMs: number): Promise<boolean> {
    if (this.highest >= seq) return true;
    if (this.broken !== undefined) return false;
    let timer: NodeJS.Timeout | undefined;
    const w = { seq, wake: () => undefined as void };
    const reached = new Promise<void>((resolve) => {
      w.wake = resolve;
      this.waiters.push(w);
      timer = setTimeout(resolve, timeoutMs);
    });
    this.wake();
    await reached;
    clearTimeout(timer);
    this.waiters = this.waiters.filter((x) => x !== w);
    return this.broken === undefined && this.highest >= seq;
  }

  /** Stops the subscription and any pending retry. */
  async close(): Promise<void> {
    this.break("closed");
    for (const s of this.subscriptions) s.unsubscribe();
    await this.pulling?.catch(() => undefined);
  }

  /** Something was (probably) committed: read what is new, once more if woken during a read. */
  private wake(): void {
    if (this.broken !== undefined) return;
    if (this.pulling !== undefined) {
      this.wokenAgain = true;
      return;
    }
    void this.pull(true);
  }

  private pull(expecting: boolean): Promise<void> {
    this.pulling ??= this.readNew(expecting).finally(() => (this.pulling = undefined));
    return this.pulling;
  }

  /**
   * Reads entries after the newest held until the stream has none. `expecting`: something woke
   * the tail, so a read that finds nothing is tried again a few times (RETRY_MS).
   */
  private async readNew(expecting: boolean): Promise<void> {
    let fruitless = 0;
    for (;;) {
      this.wokenAgain = false;
      const got = await this.readRun();
      if (this.broken !== undefined) return;
      const waited = this.waiters.some((w) => w.seq > this.highest);
      if (got > 0) {
        fruitless = 0;
        if (!this.wokenAgain && !waited) return;
        continue;
      }
      if (!expecting && !this.wokenAgain && !waited) return;
      if (++fruitless > RETRY_MS.length) return;
      await this.pause(RETRY_MS[fruitless - 1]!);
    }
  }

  /** Gets `head + 1`, `head + 2`, ... until the stream holds no more; returns how many came. */
  private async readRun(): Promise<number> {
    let got = 0;
    while (this.broken === undefined) {
      let m;
      try {
        this.onRequest();
        m = await this.jsm.streams.getMessage(this.stream, { seq: this.highest + 1 });
      } catch (err) {
        this.break(`read of entry ${this.highest + 1} failed: ${(err as Error).message}`);
        return got;
      }
      if (m === null) return got;
      this.receive(m.seq, m.data);
      got++;
    }
    return got;
  }

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.retry = { timer: setTimeout(resolve, ms), done: resolve };
    }).finally(() => (this.retry = undefined));
  }

  private receive(seq: number, data: Uint8Array): void {
    if (this.broken !== undefined) return;
    if (seq !== this.highest + 1) return this.break(`expected entry ${this.highest + 1}, received ${seq}`);
    let entry: ControlLogRecord;
    try {
      entry = this.decode(seq, data);
    } catch (err) {
      return this.break((err as Error).message);
    }
    this.entries.push(entry);
    if (this.entries.length > this.keep) this.entries.splice(0, this.entries.length - this.keep);
    this.highest = seq;
    for (const w of this.waiters) if (w.seq <= seq) w.wake();
  }

  private break(why: string): void {
    if (this.broken !== undefined) return;
    this.broken = why;
    if (this.retry !== undefined) {
      clearTimeout(this.retry.timer);
      this.retry.done();
    }
    for (const w of this.waiters) w.wake();
  }
}
