import type { Clock } from "../../core/index.ts";
import type { Counters } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { HolderStatus, releasedRanges, type ControlState } from "../../custody/index.ts";
import { coverageGaps, ramSurvivesAt } from "../../policies/index.ts";
import type { EvaluationState, RecoveryInFlight } from "../../policies/index.ts";
import type { Transport } from "../../transport/index.ts";
import { copyOverNats, type CopySource } from "../repair/index.ts";
import { copySources, SourceSuspicion } from "./copy-sources.ts";
import { CopyTargets } from "./copy-targets.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";

/**
 * Keeps every required scenario covered by copying, without anyone asking. Each evaluation round
 * (and every `checkMs` between rounds) it looks for coverage gaps — acknowledged sequences some
 * holder retains but a required scenario would lose (a restarted holder came back empty, a
 * declared failure took a copy away, a release left a single copy) — that have been gaps for at
 * least `graceMs` (the normal flow and the senders' own gap repair get that long first), picks a holder that would
 * survive the scenario and has not released those ranges, and copies the gap to it over NATS (fetch from the holders
 * that retain it, then a transfer offer the target admits and receipts itself). The ranges being read are an
 * in-flight recovery meanwhile, so no release drops them. When a required gap has no such holder
 * (each one that would survive has released those sequences), it asks for a standby to be brought
 * in (`enlist`), and a later pass copies there. Everything it needs is in the evaluation
 * state and the control log, so a restarted controller picks up where its predecessor was.
 */

/** What the scheduler needs from its controller. */
export interface CoverageRepairHost {
  readonly volume: string;
  readonly copier: string;
  readonly transport: Transport;
  readonly clock: Clock;
  readonly counters: Counters;
  beginRecovery(r: RecoveryInFlight): void;
  endRecovery(id: string): void;
  /** Asks for another evaluation round soon (a copy finished). */
  nudge(): void;
  /**
   * Asked before each copy starts: true lets it start. Copies for required scenarios are always
   * let through by the controller's spend guard; an optional one may be refused (`SpendRefusal`).
   */
  admitCopy?(c: PlannedCopy): { readonly allowed: boolean; readonly reason?: string };
  /** Holders whose last retention audit failed: never a copy's target (they may drop what they get). */
  unproven?(): ReadonlySet<string>;
  /** A required gap has no admitted holder to go to: bring in a standby at a site `survives` accepts. */
  enlist?(lane: string, gap: RangeSet, survives: (site: string) => boolean): void;
}

/** A copy coverage repair wants to make: the gap of one lane, for the scenarios it closes. */
export interface PlannedCopy {
  readonly id: string;
  readonly target: string;
  readonly lane: string;
  readonly ranges: RangeSet;
  readonly sources: readonly string[];
  /** True when a required scenario needs it; false when it only serves optional ones. */
  readonly required: boolean;
  readonly scenarios: readonly string[];
}

/** An optional copy the spend guard refused in the latest pass (tried again every pass). */
export interface DeferredCopy {
  readonly target: string;
  readonly lane: string;
  readonly ranges: RangeSet;
  readonly scenarios: readonly string[];
  readonly reason: string;
}

/** One copy under way or recently tried, per target and lane. */
interface Attempt {
  copying: boolean;
  at: number;
  /** What it copied: only a retry of these waits `retryMs`; a new gap starts at once. */
  ranges: RangeSet;
}

/** Retry intervals a source that failed a fetch stays last in the copies' source order. */
const SUSPECT_ROUNDS = 5;
/** Retry intervals a target that does not take copies is passed over. */
const PASS_OVER_ROUNDS = 10;

export class CoverageRepair {
  private readonly attempts = new Map<string, Attempt>();
  /** Per scenario and lane: gap sequences by the time they were first seen a gap. */
  private readonly firstSeen = new Map<string, { at: number; seqs: RangeSet }[]>();
  private seq = 0;

  /** Sources that failed a fetch lately: asked last (see SourceSuspicion). */
  private readonly suspicion: SourceSuspicion;
  /** Targets that keep not claiming what they were sent: passed over for a while (see CopyTargets). */
  private readonly targets: CopyTargets;

  constructor(
    private readonly host: CoverageRepairHost,
    private readonly opts: { readonly graceMs: number; readonly retryMs: number; readonly optional?: boolean },
  ) {
    this.suspicion = new SourceSuspicion(opts.retryMs * SUSPECT_ROUNDS);
    this.targets = new CopyTargets(opts.graceMs, opts.retryMs * PASS_OVER_ROUNDS);
  }

  /** Optional copies refused in the latest pass (empty when none was). */
  deferred: DeferredCopy[] = [];

  /**
   * The part of `gap` that has been a gap for at least `graceMs` (the normal flow and the senders'
   * own gap repair had that long). Remembers when each sequence first showed up as missing.
   */
  private overdue(key: string, gap: RangeSet, now: number): RangeSet {
    const list = (this.firstSeen.get(key) ?? [])
      .map((e) => ({ at: e.at, seqs: e.seqs.intersect(gap) }))
      .filter((e) => !e.seqs.isEmpty);
    let known = RangeSet.EMPTY;
    let due = RangeSet.EMPTY;
    for (const e of list) {
      known = known.union(e.seqs);
      if (now - e.at >= this.opts.graceMs) due = due.union(e.seqs);
    }
    const fresh = gap.subtract(known);
    if (!fresh.isEmpty) list.push({ at: now, seqs: fresh });
    this.firstSeen.set(key, list);
    return due;
  }

  /**
   * One round: `state` is the evaluation input on fresh evidence only, `s` the folded control log.
   * Starts at most one copy per target and lane; never throws.
   */
  progress(state: EvaluationState, s: ControlState): void {
    const now = this.host.clock.now();
    const all = coverageGaps(state, state.source.lanes, { optional: this.opts.optional === true });
    const seenKeys = new Set(all.map((g) => `${g.scenario}\u0000${g.lane}`));
    for (const k of [...this.firstSeen.keys()]) if (!seenKeys.has(k)) this.firstSeen.delete(k);
    const gaps = all
      .map((g) => ({ ...g, gap: this.overdue(`${g.scenario}\u0000${g.lane}`, g.gap, now) }))
      .filter((g) => !g.gap.isEmpty);
    const deferred: DeferredCopy[] = [];
    this.deferred = deferred;
    if (gaps.length === 0) return;
    // Per target and lane, the union of the gaps it is the chosen home for (required when any
    // required scenario's gap is among them: the optional part then rides along).
    const plan = new Map<
      string,
      { target: string; lane: string; ranges: RangeSet; required: boolean; scenarios: string[] }
    >();
    const unproven = this.host.unproven?.() ?? new Set<string>();
    for (const g of gaps) {
      const target = this.targetFor(state, s, g, unproven, now);
      if (target === undefined) continue;
      const key = `${target}/${g.lane}`;
      const p = plan.get(key);
      plan.set(key, {
        target,
        lane: g.lane,
        ranges: (p?.ranges ?? RangeSet.EMPTY).union(g.gap),
        required: (p?.required ?? false) || g.required,
        scenarios: [...(p?.scenarios ?? []), g.scenario],
      });
    }
    for (const [key, p] of plan) {
      const a = this.attempts.get(key);
      if (a !== undefined && (a.copying || (now - a.at < this.opts.retryMs && a.ranges.coversAll(p.ranges)))) continue;
      if (this.targets.retrying(key, p.ranges, now)) {
        this.host.counters.inc("coverage_target_not_taking");
        continue;
      }
      const sources = copySources(state, p.lane, p.ranges, p.target, (h) => this.suspicion.suspect(h, now));
      const id = `coverage-${this.host.copier}-${this.seq + 1}`;
      const admitted = this.host.admitCopy?.({ id, ...p, sources: sources.map((x) => x.holderId) }) ?? {
        allowed: true,
      };
      if (!admitted.allowed) {
        deferred.push({
          target: p.target,
          lane: p.lane,
          ranges: p.ranges,
          scenarios: p.scenarios,
          reason: admitted.reason ?? "refused",
        });
        continue;
      }
      void this.copy(key, p, sources);
    }
  }

  /**
   * The home for gap `g`: an active holder that survives its scenario, has not released those
   * ranges, is proven and not passed over, holding the most of the lane already. Without one the
   * gap is counted and, when required, a standby is asked for.
   */
  private targetFor(
    state: EvaluationState,
    s: ControlState,
    g: ReturnType<typeof coverageGaps>[number],
    unproven: ReadonlySet<string>,
    now: number,
  ): string | undefined {
    const scenario = state.scenarios.find((x) => x.name === g.scenario)!;
    const released = (id: string) => releasedRanges(s, obligationIdOf(this.host.volume, g.lane), id);
    const able = state.holders.filter(
      (h) =>
        s.holders[h.id]?.status === HolderStatus.active &&
        ramSurvivesAt(state, h.site, scenario.losses) &&
        !released(h.id).intersects(g.gap),
    );
    if (able.some((h) => unproven.has(h.id))) this.host.counters.inc("coverage_target_unproven");
    const candidates = able
      .filter((h) => !unproven.has(h.id) && !this.targets.passedOver(`${h.id}/${g.lane}`, now))
      .map((h) => ({
        id: h.id,
        has: h.claims.filter((c) => c.lane === g.lane).reduce((n, c) => n + c.ranges.count, 0),
      }))
      .sort((a, b) => b.has - a.has || (a.id < b.id ? -1 : 1));
    const target = candidates[0];
    if (target === undefined) {
      this.host.counters.inc("coverage_gap_no_target");
      if (g.required) this.host.enlist?.(g.lane, g.gap, (site) => ramSurvivesAt(state, site, scenario.losses));
      return undefined;
    }
    return target.id;
  }

  private async copy(
    key: string,
    p: { target: string; lane: string; ranges: RangeSet },
    sources: CopySource[],
  ): Promise<void> {
    const attempt: Attempt = { copying: true, at: this.host.clock.now(), ranges: p.ranges };
    this.attempts.set(key, attempt);
    const id = `coverage-${this.host.copier}-${++this.seq}`;
    this.host.counters.inc("coverage_copy_started");
    this.host.beginRecovery({ id, lane: p.lane, ranges: p.ranges, sources: sources.map((x) => x.holderId) });
    try {
      const out = await copyOverNats(this.host.transport, {
        copier: this.host.copier,
        volume: this.host.volume,
        lane: p.lane,
        target: p.target,
        missing: p.ranges,
        sources,
        clock: this.host.clock,
      });
      this.host.counters.inc("coverage_copied_units", out.units);
      this.targets.offered(key, out.copied, this.host.clock.now());
      if (!out.unavailable.isEmpty) this.host.counters.inc("coverage_unavailable_seqs", out.unavailable.count);
      for (const h of Object.keys(out.sourceErrors)) this.suspicion.failed(h, this.host.clock.now());
    } catch {
      this.host.counters.inc("coverage_copy_failed");
    } finally {
      attempt.copying = false;
      attempt.at = this.host.clock.now();
      this.host.endRecovery(id);
      this.host.nudge();
    }
  }
}
