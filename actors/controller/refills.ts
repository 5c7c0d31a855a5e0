import type { Clock } from "../../core/clock.ts";
import type { Counters } from "../../core/counters.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { HolderStatus, releasedRanges, type ControlState } from "../../custody/control-state.ts";
import type { Holding } from "../../custody/receipt-ledger.ts";
import type { RecoveryInFlight } from "../../policies/evaluation-state.ts";
import type { Transport } from "../../transport/transport.ts";
import { copyOverNats, type CopySource } from "../repair/copy-over-nats.ts";
import { obligationIdOf } from "./controller-config.ts";

/**
 * Refills restarted holders. When the control log admits a holder's new incarnation, what the
 * previous one claimed in RAM is gone; its upstream re-sends what it still retains at once, and
 * whatever is still missing a moment later (`graceMs`) is copied from surviving holders over NATS
 * (fetch, then a transfer offer the new incarnation admits and receipts itself). The ranges being
 * read are registered as in-flight recoveries so no release drops them mid-copy. A refill ends when
 * the new incarnation's receipts cover what was lost (minus what the log has since released), or
 * when a newer incarnation replaces it.
 */

/** What a restarted holder's previous incarnation held that is still owed to it. */
export interface Refill {
  readonly holderId: string;
  readonly incarnation: number;
  readonly lane: string;
  readonly lost: RangeSet;
  readonly since: number;
  copying: boolean;
  lastCopyAt: number;
  copies: number;
}

/** What the scheduler needs from its controller. */
export interface RefillHost {
  readonly volume: string;
  readonly copier: string;
  readonly transport: Transport;
  readonly clock: Clock;
  readonly counters: Counters;
  /** Verified holdings of the admitted incarnations (the ledger). */
  holdings(lane: string): readonly Holding[];
  beginRecovery(r: RecoveryInFlight): void;
  endRecovery(id: string): void;
  /** Asks for another evaluation round soon (a copy finished). */
  nudge(): void;
}

export class RefillScheduler {
  private readonly open = new Map<string, Refill>();

  constructor(
    private readonly host: RefillHost,
    private readonly opts: { readonly graceMs: number; readonly retryMs: number; readonly staleAfterMs: number },
  ) {}

  /** Refills still open, by `holder/lane` (status and tests). */
  get pending(): readonly Refill[] {
    return [...this.open.values()];
  }

  /** Holder `holderId` came back as `incarnation` having lost `lost` of `lane` (replaces any older refill of it). */
  add(holderId: string, incarnation: number, lane: string, lost: RangeSet): void {
    if (lost.isEmpty) return;
    this.open.set(`${holderId}/${lane}`, { holderId, incarnation, lane, lost, since: this.host.clock.now(), copying: false, lastCopyAt: -Infinity, copies: 0 });
    this.host.counters.inc("refill_started");
  }

  /** One evaluation round's worth of progress: close what is covered, copy what is overdue. */
  progress(s: ControlState): void {
    const now = this.host.clock.now();
    for (const [key, r] of this.open) {
      const h = s.holders[r.holderId];
      if (h === undefined || h.incarnation !== r.incarnation || h.status !== HolderStatus.active) {
        this.open.delete(key);
        this.host.counters.inc("refill_superseded");
        continue;
      }
      const missing = this.missing(r, s);
      if (missing.isEmpty) {
        this.open.delete(key);
        this.host.counters.inc("refill_completed");
        continue;
      }
      if (r.copying || now - r.since < this.opts.graceMs || now - r.lastCopyAt < this.opts.retryMs) continue;
      void this.copy(r, missing, s);
    }
  }

  /** What the refill still waits for: lost, minus what the target now receipts, minus what the log released for it. */
  private missing(r: Refill, s: ControlState): RangeSet {
    let have = RangeSet.EMPTY;
    for (const x of this.host.holdings(r.lane)) if (x.holderId === r.holderId && x.incarnation === r.incarnation) have = have.union(x.retained);
    return r.lost.subtract(have).subtract(releasedRanges(s, obligationIdOf(this.host.volume, r.lane), r.holderId));
  }

  private async copy(r: Refill, missing: RangeSet, s: ControlState): Promise<void> {
    r.copying = true;
    r.copies++;
    const id = `refill-${r.holderId}-${r.incarnation}-${r.lane}-${r.copies}`;
    const now = this.host.clock.now();
    // Fresh claims of other active holders, the ones holding most of what is missing first.
    const by = new Map<string, RangeSet>();
    for (const x of this.host.holdings(r.lane)) {
      if (x.holderId === r.holderId || s.holders[x.holderId]?.status !== HolderStatus.active || now - x.issuedAt > this.opts.staleAfterMs) continue;
      by.set(x.holderId, (by.get(x.holderId) ?? RangeSet.EMPTY).union(x.retained.intersect(missing)));
    }
    const sources: CopySource[] = [...by].filter(([, rs]) => !rs.isEmpty).map(([holderId, retained]) => ({ holderId, retained })).sort((a, b) => b.retained.count - a.retained.count || (a.holderId < b.holderId ? -1 : 1));
    this.host.beginRecovery({ id, lane: r.lane, ranges: missing, sources: sources.map((x) => x.holderId) });
    try {
      const out = await copyOverNats(this.host.transport, { copier: this.host.copier, volume: this.host.volume, lane: r.lane, target: r.holderId, missing, sources });
      this.host.counters.inc("refill_copied_units", out.units);
      if (!out.unavailable.isEmpty) this.host.counters.inc("refill_unavailable_seqs", out.unavailable.count);
    } catch {
      this.host.counters.inc("refill_copy_failed");
    } finally {
      r.copying = false;
      r.lastCopyAt = this.host.clock.now();
      this.host.endRecovery(id);
      this.host.nudge();
    }
  }
}
