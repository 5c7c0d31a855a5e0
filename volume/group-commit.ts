import type { Clock } from "../core/index.ts";

/** Group commit tuning: how many operations share one barrier, and how long the first may wait for company. */
export interface GroupCommitOptions {
  /** Largest number of queued operations handed to one batch (≥ 1). */
  maxBatch: number;
  /** How long a lone operation waits for others before its batch starts (0 = start on the next microtask). */
  maxDelayMs: number;
  clock: Clock;
}

/**
 * A serial batching queue. Operations submitted while a batch runs (or within `maxDelayMs` of the
 * first queued one) are handed to `run` together, in submission order, at most `maxBatch` at a
 * time; batches never overlap, so per-LBA order is submission order (G8). `run` owns resolving
 * its items; if it throws, `onError` receives the error and the batch.
 */
export class GroupCommit<T> {
  private queue: T[] = [];
  private running = false;
  private scheduled = false;
  private timer: unknown;

  constructor(
    private readonly opts: GroupCommitOptions,
    private readonly run: (batch: T[]) => Promise<void>,
    private readonly onError: (err: unknown, batch: T[]) => void,
  ) {
    if (!Number.isInteger(opts.maxBatch) || opts.maxBatch < 1)
      throw new RangeError("maxBatch must be a positive integer");
    if (!(opts.maxDelayMs >= 0)) throw new RangeError("maxDelayMs must be ≥ 0");
  }

  /** Operations waiting for a batch. */
  get queued(): number {
    return this.queue.length;
  }

  /** True while a batch runs or operations wait. */
  get busy(): boolean {
    return this.running || this.queue.length > 0;
  }

  /** Queues `item`; it will be part of a batch soon. */
  submit(item: T): void {
    this.queue.push(item);
    this.kick();
  }

  private kick(): void {
    if (this.running || this.scheduled) return;
    if (this.opts.maxDelayMs > 0 && this.queue.length < this.opts.maxBatch) {
      if (this.timer === undefined) {
        this.timer = this.opts.clock.setTimeout(() => {
          this.timer = undefined;
          void this.drain();
        }, this.opts.maxDelayMs);
      }
      return;
    }
    this.scheduled = true;
    // A microtask lets every operation submitted in the same synchronous run join the batch.
    queueMicrotask(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    if (this.timer !== undefined) {
      this.opts.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.opts.maxBatch);
        try {
          await this.run(batch);
        } catch (err) {
          this.onError(err, batch);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
