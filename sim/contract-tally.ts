import { isDestructive, type FaultEvent } from "./fault-schedule.ts";

/**
 * What a run has confirmed within the contract, and what became of coverage after each strike.
 * Shared by the model and the actor runners, so both judge "confirmed" and liveness alike:
 * - a confirmation counts only when no destructive fault (strike, evidence loss) happened within
 *   the repair budget before it, since evidence gathered then may still include the victims;
 * - every destructive fault clears what was confirmed before it;
 * - after a strike, coverage is back once every required cut reaches the writes acknowledged at
 *   the strike: within the budget, late, or never (by the end of the run).
 */
export class ContractTally {
  /** Highest cut confirmed per required scenario since the last destructive fault. */
  readonly confirmedMax = new Map<string, number>();
  /** Strikes that came after a confirmation and were checked against it. */
  strikesChecked = 0;
  private lastDestructiveAt = -Infinity;
  private readonly recovering: Array<{ at: number; target: number }> = [];
  private readonly tally = { strikes: 0, inBudget: 0, late: 0 };

  constructor(private readonly settleMs: number) {}

  /** True when the last destructive fault is at least the repair budget in the past. */
  inContract(nowMs: number): boolean {
    return nowMs - this.lastDestructiveAt >= this.settleMs;
  }

  /** The controller reported `cuts` (required scenario → cut) at `nowMs`. */
  confirmed(cuts: ReadonlyMap<string, number>, nowMs: number): void {
    for (let i = this.recovering.length - 1; i >= 0; i--) {
      const r = this.recovering[i]!;
      if ([...cuts.values()].every((c) => c >= r.target)) {
        if (nowMs - r.at <= this.settleMs) this.tally.inBudget++;
        else this.tally.late++;
        this.recovering.splice(i, 1);
      }
    }
    if (!this.inContract(nowMs)) return;
    for (const [name, cut] of cuts) this.confirmedMax.set(name, Math.max(this.confirmedMax.get(name) ?? -1, cut));
  }

  /** Fault `f` is about to be applied at `nowMs`. */
  faultStarting(f: FaultEvent, nowMs: number): void {
    if (isDestructive(f)) this.lastDestructiveAt = nowMs;
  }

  /** Fault `f` was applied: confirmations made before a destructive fault promise nothing after it. */
  faultApplied(f: FaultEvent): void {
    if (isDestructive(f)) this.confirmedMax.clear();
  }

  /** The cut confirmed for `scenario` as it strikes (undefined: nothing confirmed within the contract). */
  confirmedAtStrike(scenario: string): number | undefined {
    const c = this.confirmedMax.get(scenario);
    if (c !== undefined) this.strikesChecked++;
    return c;
  }

  /** A strike happened at `nowMs` while the writer had acknowledged through `acknowledged`. */
  struck(nowMs: number, acknowledged: number): void {
    this.tally.strikes++;
    this.recovering.push({ at: nowMs, target: acknowledged });
  }

  /** Liveness tally: strikes, back within the budget, late, and not by the end of the run. */
  recovery(): { strikes: number; inBudget: number; late: number; never: number } {
    return { ...this.tally, never: this.recovering.length };
  }
}
