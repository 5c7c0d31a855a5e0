/**
 * The demo's timeline, as pure data: at each sample, which range every holder retains and
 * whether its site is still alive; from that, per named scenario, the cut that would survive
 * losing the scenario's regions or AZs at that moment (bases count from their cut on).
 */
import { RangeSet } from "../../lanes/index.ts";

/** One sample of the run. */
export interface TimelineSample {
  readonly tMs: number;
  /** Holder id → retained ranges (`RangeSet.toJSON`) and payload bytes; absent once the holder is dead. */
  readonly holders: Readonly<Record<string, { readonly retained: [number, number][]; readonly bytes: number }>>;
  /** Highest sequence the writer had acknowledged. */
  readonly acked: number;
}

/** A named scenario for the timeline: holders it destroys and bases that survive it. */
export interface TimelineScenario {
  readonly name: string;
  readonly lostHolders: readonly string[];
}

/** A base snapshot anchoring recovery: held by `holder`, complete through `cut`, taken at `fromMs`. */
export interface TimelineBase {
  readonly holder: string;
  readonly cut: number;
  readonly fromMs: number;
}

/**
 * Cut that survives `scenario` at `sample`: from the newest surviving base (or 0), as far as the
 * surviving holders' retained ranges reach contiguously. Never beyond what was acknowledged.
 * Re-derives the cut on purpose rather than reusing the policy engine's (policies/survival-report.ts):
 * the timeline plots what the sampled holders actually retained, to be read against the engine's
 * predicted cut in the scenario table.
 */
export function survivingCutAt(
  sample: TimelineSample,
  scenario: TimelineScenario,
  bases: readonly TimelineBase[],
): number {
  const lost = new Set(scenario.lostHolders);
  let have = RangeSet.EMPTY;
  for (const [h, s] of Object.entries(sample.holders))
    if (!lost.has(h)) have = have.union(RangeSet.fromJSON(s.retained));
  const start = bases
    .filter((b) => b.fromMs <= sample.tMs && !lost.has(b.holder) && sample.holders[b.holder] !== undefined)
    .reduce((m, b) => Math.max(m, b.cut), 0);
  const cover = start > 0 ? have.union(RangeSet.of(1, start)) : have;
  const through = cover.contiguousThrough(1);
  return Math.min(through, sample.acked);
}
