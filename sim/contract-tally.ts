import { FaultKind, isDestructive, type FaultEvent } from "./fault-schedule.ts";

/** Why a strike's liveness is not held to the contract (tallied apart, never asserted). */
export const OutsideContract = {
  /** Another destructive fault came within the repair budget before this strike. */
  secondLoss: "second_loss_within_budget",
  /** Another destructive fault came within the repair budget after this strike. */
  lossDuringRepair: "loss_during_repair",
  /** The run ended before the repair budget after the strike was over. */
  runEnded: "run_ended_within_budget",
} as const;
export type OutsideContract = (typeof OutsideContract)[keyof typeof OutsideContract];

/** Liveness tally of a run (see ContractTally). */
export interface RecoveryTally {
  /** Strikes held to the contract. */
  readonly strikes: number;
  readonly inBudget: number;
  readonly late: number;
  readonly never: number;
  /** Strikes outside the contract, by reason (not asserted). */
  readonly outside: Readonly<Record<string, number>>;
  /** Required scenarios that were not being met before a strike, so no strike could owe them back. */
  readonly unmetBefore: number;
  /** One line per strike held to the contract that did not come back within the budget. */
  readonly failures: readonly string[];
}

interface OpenStrike {
  readonly at: number;
  readonly scenario: string;
  /** The newest acknowledged sequence that physically survived the strike: what must be protected again. */
  readonly target: number;
  /** Required scenarios whose coverage was being met before the strike (only they are owed back). */
  readonly expected: readonly string[];
  outside: OutsideContract | undefined;
  late: boolean;
  /** Partitions and controller outages inside the repair window: the budget grows by their length. */
  extraMs: number;
  lastCuts: Map<string, number>;
}

/**
 * What a run has confirmed within the contract, and what became of coverage after each strike.
 * How the actor runner judges "confirmed" and liveness:
 * - a confirmation counts only when no destructive fault (strike, evidence loss) happened within
 *   the repair budget before it, since evidence gathered then may still include the victims;
 * - every destructive fault clears what was confirmed before it;
 * - liveness (asserted): after a strike the contract allows, every required scenario that was
 *   being met before it (its cut had reached what was acknowledged a repair budget earlier) must
 *   again reach the newest acknowledged write that physically survived the strike, within the
 *   repair budget (lengthened by partitions and controller outages inside it, which delay any
 *   repair). Strikes outside the contract — another loss within the budget before or after — are
 *   tallied apart with the reason.
 */
export class ContractTally {
  /** Highest cut confirmed per required scenario since the last destructive fault. */
  readonly confirmedMax = new Map<string, number>();
  /** Strikes that came after a confirmation and were checked against it. */
  strikesChecked = 0;
  private lastDestructiveAt = -Infinity;
  private readonly open: OpenStrike[] = [];
  private readonly done: { strike: OpenStrike; inBudget: boolean; doneAt: number }[] = [];
  private readonly outsideTally = new Map<string, number>();
  private unmetBefore = 0;
  /** Latest cut reported per required scenario (fresh evidence only; -1 otherwise). */
  private readonly latest = new Map<string, number>();
  /** Partitions and controller outages so far (start, end). */
  private readonly disruptions: { start: number; end: number }[] = [];
  /** (time, acknowledged head) samples, to know what was acknowledged a repair budget ago. */
  private readonly acked: { at: number; head: number }[] = [];

  constructor(private readonly settleMs: number) {}

  /** True when the last destructive fault is at least the repair budget in the past. */
  inContract(nowMs: number): boolean {
    return nowMs - this.lastDestructiveAt >= this.settleMs;
  }

  /** The writer acknowledged through `head` at `nowMs`. */
  acknowledged(head: number, nowMs: number): void {
    const last = this.acked[this.acked.length - 1];
    if (last === undefined || last.head !== head) this.acked.push({ at: nowMs, head });
  }

  private ackedAt(t: number): number {
    let head = 0;
    for (const a of this.acked) {
      if (a.at > t) break;
      head = a.head;
    }
    return head;
  }

  /** The controller reported `cuts` (required scenario → cut, -1 when not on fresh evidence) at `nowMs`. */
  confirmed(cuts: ReadonlyMap<string, number>, nowMs: number): void {
    for (const [name, cut] of cuts) this.latest.set(name, cut);
    for (let i = this.open.length - 1; i >= 0; i--) {
      const r = this.open[i]!;
      r.lastCuts = new Map(cuts);
      if (r.expected.every((s) => (cuts.get(s) ?? -1) >= r.target)) {
        this.open.splice(i, 1);
        this.done.push({ strike: r, inBudget: nowMs - r.at <= this.settleMs + r.extraMs, doneAt: nowMs });
      }
    }
    if (!this.inContract(nowMs)) return;
    for (const [name, cut] of cuts) this.confirmedMax.set(name, Math.max(this.confirmedMax.get(name) ?? -1, cut));
  }

  /** Fault `f` is about to be applied at `nowMs`. */
  faultStarting(f: FaultEvent, nowMs: number): void {
    // Another loss inside an open strike's repair window takes that strike out of the contract; a
    // partition or a controller outage there only delays the repair: the budget grows by its length.
    for (const r of [...this.open, ...this.done.map((d) => d.strike)]) {
      if (r.outside !== undefined || nowMs - r.at > this.settleMs + r.extraMs || nowMs === r.at) continue;
      if (isDestructive(f)) r.outside = OutsideContract.lossDuringRepair;
      else if (
        f.kind === FaultKind.partition ||
        f.kind === FaultKind.controllerLoss ||
        f.kind === FaultKind.controllerPause
      )
        r.extraMs += f.durationMs;
    }
    if (f.kind === FaultKind.partition || f.kind === FaultKind.controllerLoss || f.kind === FaultKind.controllerPause)
      this.disruptions.push({ start: nowMs, end: nowMs + f.durationMs });
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

  /**
   * A strike of `scenario` happens at `nowMs`; `target` is the newest acknowledged write that
   * physically survived it. Call before `faultStarting` of the same fault. `outside`: a strike the
   * contract does not cover, with the reason.
   */
  struck(nowMs: number, scenario: string, target: number): void {
    const outside = this.inContract(nowMs) ? undefined : OutsideContract.secondLoss;
    // Being met: the cut had reached what was acknowledged a repair budget ago (and is not empty
    // while writes exist).
    const floor = this.ackedAt(nowMs - this.settleMs);
    const someWritten = this.ackedAt(nowMs) > 0;
    const expected = [...this.latest]
      .filter(([, cut]) => cut >= floor && (cut > 0 || !someWritten))
      .map(([name]) => name);
    this.unmetBefore += this.latest.size - expected.length;
    // A partition or controller outage still under way when the strike hits delays the repair too.
    let extraMs = 0;
    for (const d of this.disruptions) if (d.end > nowMs) extraMs += d.end - Math.max(d.start, nowMs);
    this.open.push({ at: nowMs, scenario, target, expected, outside, late: false, extraMs, lastCuts: new Map() });
  }

  /** Liveness tally at the end of the run (`endMs`: when it ended; strikes younger than the budget are not judged). */
  recovery(endMs = Infinity): RecoveryTally {
    for (const r of this.open)
      if (r.outside === undefined && endMs - r.at < this.settleMs + r.extraMs) r.outside = OutsideContract.runEnded;
    const outside = new Map(this.outsideTally);
    let inBudget = 0;
    let late = 0;
    let never = 0;
    const failures: string[] = [];
    const held = (r: OpenStrike) => {
      if (r.outside === undefined) return true;
      outside.set(r.outside, (outside.get(r.outside) ?? 0) + 1);
      return false;
    };
    for (const d of this.done) {
      if (!held(d.strike)) continue;
      if (d.inBudget) inBudget++;
      else {
        late++;
        failures.push(
          `${describe(d.strike, "late")} (back after ${((d.doneAt - d.strike.at) / 1000).toFixed(3)} s, ` +
            `budget ${((this.settleMs + d.strike.extraMs) / 1000).toFixed(3)} s)`,
        );
      }
    }
    for (const r of this.open) {
      if (!held(r)) continue;
      never++;
      failures.push(describe(r, "never"));
    }
    return {
      strikes: inBudget + late + never,
      inBudget,
      late,
      never,
      outside: Object.fromEntries([...outside].sort()),
      unmetBefore: this.unmetBefore,
      failures,
    };
  }
}

function describe(r: OpenStrike, what: string): string {
  const short = r.expected
    .filter((s) => (r.lastCuts.get(s) ?? -1) < r.target)
    .map((s) => `${s}=${r.lastCuts.get(s) ?? "none"}`);
  return `${what}: ${r.scenario} at ${(r.at / 1000).toFixed(3)}s, target ${r.target}, short: ${short.join(", ")}`;
}
