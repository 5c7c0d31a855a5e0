import type { Clock } from "../../core/index.ts";
import type { Counters } from "../../core/index.ts";
import { ProtectionTimeoutError } from "./writer-config.ts";

interface Waiter {
  contract: string;
  target: Record<string, number>;
  resolve: () => void;
  reject: (e: unknown) => void;
  timer?: unknown;
}

/** What the waiters ask of the writer: how far a lane is proven under a contract, and where its history starts. */
export interface ProtectionSource {
  protectedThrough(contract: string, lane: string): number;
  firstSeq(lane: string): number;
}

/**
 * Protected syncs waiting for receipts: each waits until every lane head it captured is proven
 * under its contract, or fails with ProtectionTimeoutError after its timeout.
 */
export class ProtectionWaiters {
  private readonly waiters = new Set<Waiter>();

  constructor(
    private readonly source: ProtectionSource,
    private readonly clock: Clock,
    private readonly counters: Counters,
  ) {}

  private satisfied(w: Waiter): boolean {
    return Object.entries(w.target).every(
      ([lane, head]) => head < this.source.firstSeq(lane) || this.source.protectedThrough(w.contract, lane) >= head,
    );
  }

  /** Resolves once every lane of `target` is proven through its head under `contract`. */
  wait(contract: string, target: Record<string, number>, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { contract, target, resolve, reject };
      if (this.satisfied(w)) return resolve();
      w.timer = this.clock.setTimeout(() => {
        this.waiters.delete(w);
        this.counters.inc("protection_timeout");
        reject(
          new ProtectionTimeoutError({
            contract,
            target,
            proven: Object.fromEntries(Object.keys(target).map((l) => [l, this.source.protectedThrough(contract, l)])),
          }),
        );
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  /** Resolves every waiter whose target is now proven (after a receipt or an edge release). */
  wake(): void {
    for (const w of [...this.waiters]) {
      if (!this.satisfied(w)) continue;
      this.waiters.delete(w);
      if (w.timer !== undefined) this.clock.clearTimeout(w.timer);
      w.resolve();
    }
  }

  /** Fails every waiter with `err` (the writer was fenced or stopped). */
  failAll(err: unknown): void {
    for (const w of this.waiters) {
      if (w.timer !== undefined) this.clock.clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiters.clear();
  }
}
