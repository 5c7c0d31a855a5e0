import { AuditOutcome } from "./audit-verdict.ts";

/**
 * Per-holder retention-audit state and the audit's byte budget. A holder whose latest judged
 * audit failed or timed out is `failed`: its receipts stop counting (its evidence is unproven)
 * until a later audit passes. Void audits change nothing. Pure (no clock: times are passed in).
 */

/** A holder's audit state, as an enumeration. */
export const AuditState = { Pending: "pending", Passed: "passed", Failed: "failed" } as const;
export type AuditState = (typeof AuditState)[keyof typeof AuditState];

/** One holder's audit record (the status document's `audits` rows). */
export interface HolderAuditRecord {
  readonly holder: string;
  readonly state: AuditState;
  /** When the latest judged audit ended (ms), null before the first. */
  readonly lastAuditAtMs: number | null;
  readonly passed: number;
  readonly failed: number;
  readonly timedOut: number;
  readonly voided: number;
}

const fresh = (holder: string): HolderAuditRecord => ({
  holder,
  state: AuditState.Pending,
  lastAuditAtMs: null,
  passed: 0,
  failed: 0,
  timedOut: 0,
  voided: 0,
});

/** Every holder's audit record. */
export class AuditBook {
  private readonly records = new Map<string, HolderAuditRecord>();

  /** Folds one outcome; returns true when the holder's state changed (evaluation must be redone). */
  record(holder: string, outcome: AuditOutcome, atMs: number): boolean {
    const r = this.records.get(holder) ?? fresh(holder);
    let next: HolderAuditRecord;
    switch (outcome) {
      case AuditOutcome.Passed:
        next = { ...r, state: AuditState.Passed, lastAuditAtMs: atMs, passed: r.passed + 1 };
        break;
      case AuditOutcome.Failed:
        next = { ...r, state: AuditState.Failed, lastAuditAtMs: atMs, failed: r.failed + 1 };
        break;
      case AuditOutcome.Timeout:
        next = { ...r, state: AuditState.Failed, lastAuditAtMs: atMs, timedOut: r.timedOut + 1 };
        break;
      case AuditOutcome.Void:
        next = { ...r, voided: r.voided + 1 };
        break;
    }
    this.records.set(holder, next);
    return next.state !== r.state;
  }

  /** Holders whose evidence is unproven now (latest judged audit failed or timed out). */
  unproven(): Set<string> {
    return new Set([...this.records.values()].filter((r) => r.state === AuditState.Failed).map((r) => r.holder));
  }

  /** True when `holder`'s latest judged audit failed or timed out. */
  isUnproven(holder: string): boolean {
    return this.records.get(holder)?.state === AuditState.Failed;
  }

  /** Records of `holders` (pending for those never audited), in the order given. */
  rows(holders: readonly string[]): HolderAuditRecord[] {
    return holders.map((h) => this.records.get(h) ?? fresh(h));
  }
}

/**
 * The audit's cost bound: at most `maxBytes` audited payload bytes per `periodMs` (the controller's
 * reference reads; the audited holders read as much again). A challenge starts only while the
 * period's spend is below the bound, so one period overshoots by at most one challenge.
 */
export class AuditBudget {
  private periodStart = -Infinity;
  private spentBytes = 0;

  constructor(
    readonly maxBytes: number,
    readonly periodMs: number,
  ) {}

  private roll(nowMs: number): void {
    if (nowMs - this.periodStart >= this.periodMs) {
      this.periodStart = nowMs;
      this.spentBytes = 0;
    }
  }

  /** True while a challenge may start at `nowMs`. */
  allows(nowMs: number): boolean {
    this.roll(nowMs);
    return this.spentBytes < this.maxBytes;
  }

  /** Counts `bytes` read at `nowMs`. */
  spend(bytes: number, nowMs: number): void {
    this.roll(nowMs);
    this.spentBytes += bytes;
  }

  /** Bytes spent in the current period. */
  get spent(): number {
    return this.spentBytes;
  }
}
