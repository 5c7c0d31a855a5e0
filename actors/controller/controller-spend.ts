import type { Counters } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { BudgetKind } from "../../policies/index.ts";
import type { CommitRun } from "../../policies/index.ts";
import { parseSpendConfig, SpendGuard, type SpendReport } from "../../policies/index.ts";
import type { VolumeTopology } from "./controller-config.ts";
import type { DeferredCopy, PlannedCopy } from "./coverage-repair.ts";

/**
 * Bytes `ranges` of `lane` took when the writer committed them, from its commit runs. Sequences
 * no run describes any more are priced at the largest per-sequence size seen (never at zero:
 * an unknown price must not let optional work through). Pure.
 */
export function bytesOfRanges(commits: readonly CommitRun[], lane: string, ranges: RangeSet): number {
  let bytes = 0;
  let described = RangeSet.EMPTY;
  let largest = 0;
  for (const c of commits) {
    if (c.lane !== lane) continue;
    largest = Math.max(largest, c.bytesPerSeq);
    const part = ranges.intersect(RangeSet.of(c.first, c.last)).subtract(described);
    if (part.isEmpty) continue;
    bytes += part.count * c.bytesPerSeq;
    described = described.union(part);
  }
  return bytes + ranges.subtract(described).count * largest;
}

/**
 * The controller's spend guard over the work it starts: coverage copies are repair-budget work,
 * required when a required scenario needs them. Without a `spend` section every copy is allowed.
 * Refusals are counted (`spend_optional_refused`, `spend_optional_refused.<reason>`) and reported.
 */
export class ControllerSpend {
  private readonly guard: SpendGuard | undefined;

  constructor(
    private readonly topology: VolumeTopology,
    spend: unknown,
    private readonly counters: Counters,
    startMs: number,
  ) {
    this.guard = spend === undefined ? undefined : new SpendGuard(parseSpendConfig(spend), startMs);
  }

  private regionOf(holder: string): string {
    const site = this.topology.sites.find((s) => s.id === this.topology.holderSites[holder]);
    return site?.region ?? `unknown:${holder}`;
  }

  /** Whether coverage repair may start `c` now (see `SpendGuard.decide`). */
  admitCopy(c: PlannedCopy, commits: readonly CommitRun[], nowMs: number): { allowed: boolean; reason?: string } {
    if (this.guard === undefined) return { allowed: true };
    const d = this.guard.decide(
      {
        id: c.id,
        kind: BudgetKind.repair,
        required: c.required,
        bytes: bytesOfRanges(commits, c.lane, c.ranges),
        fromRegions: c.sources.map((s) => this.regionOf(s)),
        toRegion: this.regionOf(c.target),
      },
      nowMs,
    );
    if (d.allowed) {
      this.counters.inc(c.required ? "spend_required_admitted" : "spend_optional_admitted");
      return { allowed: true };
    }
    this.counters.inc("spend_optional_refused");
    this.counters.inc(`spend_optional_refused.${d.reason}`);
    return { allowed: false, reason: d.reason };
  }

  /** The status document's spend section (undefined without a `spend` section). */
  report(
    nowMs: number,
    deferred: readonly DeferredCopy[],
  ):
    | (SpendReport & {
        deferred: { target: string; lane: string; seqs: string; scenarios: string[]; reason: string }[];
      })
    | undefined {
    if (this.guard === undefined) return undefined;
    return {
      ...this.guard.report(nowMs),
      deferred: deferred.map((d) => ({
        target: d.target,
        lane: d.lane,
        seqs: d.ranges.toString(),
        scenarios: [...d.scenarios],
        reason: d.reason,
      })),
    };
  }
}
