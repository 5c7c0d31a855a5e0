import { DeliverPolicy, type ConsumerMessages, type JetStreamClient } from "@nats-io/jetstream";
import type { ControlLogRecord } from "../custody/index.ts";

/**
 * One standing ordered consumer on a control-log stream, started once and kept: committed entries
 * arrive as they are stored, so a reader that refreshes every round costs no JetStream API call
 * (a consumer created and deleted per read cost several per round). It keeps the newest `keep`
 * entries; a reader asking for anything older, or a tail that saw something it cannot trust
 * (a gap, a sequence going backwards, an entry that does not decode), falls back to a one-off
 * read — the tail never hides a regression from the follower that checks for one.
 */
export class ControlLogTail {
  /** Contiguous, ascending entries, the newest `keep` received. */
  private entries: ControlLogRecord[] = [];
  private highest: number;
  private broken: string | undefined;
  private waiters: { seq: number; wake: () => void }[] = [];
  private messages: ConsumerMessages | undefined;

  private constructor(
    /** Entries the caller already read (ascending, contiguous), the tail continues after them. */
    seed: readonly ControlLogRecord[],
    startSeq: number,
    private readonly keep: number,
    private readonly decode: (seq: number, data: Uint8Array) => ControlLogRecord,
  ) {
    this.entries = seed.slice(-keep);
    this.highest = startSeq - 1;
  }

  /**
   * Starts a tail delivering entries from `startSeq` on; `seed` are the entries just before it;
   * `decode` turns a stored message into an entry (throwing when it cannot).
   */
  static async start(js: JetStreamClient, stream: string, startSeq: number, seed: readonly ControlLogRecord[], decode: (seq: number, data: Uint8Array) => ControlLogRecord, keep = 1024): Promise<ControlLogTail> {
    const tail = new ControlLogTail(seed, startSeq, keep, decode);
    const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq });
    tail.messages = await consumer.consume({ callback: (m) => tail.receive(m.seq, m.data) });
    void tail.watch(tail.messages);
    void tail.messages.closed().then(
      () => tail.break("consumer closed"),
      (err: unknown) => tail.break(`consumer failed: ${(err as Error).message}`),
    );
    return tail;
  }

  /**
   * A consumer that had to be recreated (server restart, stream deleted, consumer gone) may resume
   * on a stream that is not the one the tail read: stop trusting the tail; the next read is fresh.
   */
  private async watch(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const n of messages.status()) {
        if (n.type === "ordered_consumer_recreated" || n.type === "stream_not_found" || n.type === "consumer_not_found" || n.type === "consumer_deleted" || n.type === "heartbeats_missed") {
          this.break(`consumer ${n.type}`);
          await messages.close().catch(() => undefined);
          return;
        }
      }
    } catch {
      this.break("consumer status failed");
    }
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

  /** Resolves true once the tail has received `seq`, false after `timeoutMs` or when it breaks. */
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
    await reached;
    clearTimeout(timer);
    this.waiters = this.waiters.filter((x) => x !== w);
    return this.broken === undefined && this.highest >= seq;
  }

  /** Stops the consumer (its ephemeral consumer goes away on the server by inactivity). */
  async close(): Promise<void> {
    this.break("closed");
    await this.messages?.close().catch(() => undefined);
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
    for (const w of this.waiters) w.wake();
  }
}
