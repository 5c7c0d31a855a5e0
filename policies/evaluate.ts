import { AuditState } from "./audit-book.ts";
import { RangeSet } from "../lanes/index.ts";
import type { EvaluationState, PendingForward } from "./evaluation-state.ts";
import type { Scenario, Timeline } from "./scenario.ts";
import { PolicyInputError } from "./policy-errors.ts";
import { applyLosses, initialView, siteUsable, type SurvivorView } from "./survivor-view.ts";
import { reportFromView, Verdict, type SurvivalReport } from "./survival-report.ts";
import { repairWindowFinding, type RepairWindowFinding } from "./repair-window.ts";
import { validateEvaluationState } from "./state-validation.ts";
import { imagesOnly, withCoalescedStream } from "./coalesced-cut.ts";

/** Evaluates one scenario of simultaneous losses against the state. Pure and deterministic. */
export function evaluateScenario(state: EvaluationState, scenario: Scenario): SurvivalReport {
  const view = applyLosses(state, initialView(state), scenario.losses);
  return reportFromView(state, view, { ...scenario, kind: "scenario" });
}

/** Adds the ranges a forward delivers if its source still holds them and its target site is usable. */
function completeForward(state: EvaluationState, view: SurvivorView, f: PendingForward): SurvivorView {
  const target = state.holders.find((h) => h.id === f.to)!;
  const source = state.holders.find((h) => h.id === f.from)!;
  if (!siteUsable(view, target.site) || !siteUsable(view, source.site)) return view;
  let moved = RangeSet.EMPTY;
  for (const lc of view.claims)
    if (lc.holder === f.from && lc.claim.lane === f.lane) moved = moved.union(lc.claim.ranges.intersect(f.ranges));
  if (moved.isEmpty) return view;
  const claim = {
    lane: f.lane,
    ranges: moved,
    residency: f.residency,
    evidence: { kind: "observed" as const, atMs: state.asOfMs + f.completesAfterSec * 1000 },
  };
  return { ...view, claims: [...view.claims, { holder: f.to, site: target.site, claim }] };
}

/**
 * Evaluates sequential losses. Before each step, forwarding/repair that has completed by then
 * (and whose ends were still usable) is added; work still in flight at a step does not count,
 * and nothing completes after the last step. Throws PolicyInputError when a step comes sooner
 * than the timeline's minimum interval.
 */
export function evaluateTimeline(state: EvaluationState, timeline: Timeline, path = "timeline"): SurvivalReport {
  let view = initialView(state);
  const pending = state.forwards
    .map((f, i) => ({ f, i }))
    .sort((a, b) => a.f.completesAfterSec - b.f.completesAfterSec || a.i - b.i);
  let next = 0;
  let t = 0;
  const repairs: RepairWindowFinding[] = [];
  timeline.events.forEach((ev, k) => {
    if (k > 0 && ev.afterSec < timeline.minIntervalSec) {
      throw new PolicyInputError(
        `${path}.events[${k}].afterSec`,
        `${ev.afterSec}s is shorter than the timeline's minIntervalSec ${timeline.minIntervalSec}s`,
      );
    }
    t += ev.afterSec;
    while (next < pending.length && pending[next]!.f.completesAfterSec <= t)
      view = completeForward(state, view, pending[next++]!.f);
    const before = view;
    view = applyLosses(state, view, ev.losses);
    // The next step may come minIntervalSec later: the repair of this one must be done by then.
    if (timeline.repair !== undefined && k < timeline.events.length - 1)
      repairs.push(repairWindowFinding(state, before, view, k + 1, timeline.minIntervalSec, timeline.repair.site));
  });
  const report = reportFromView(state, view, { ...timeline, kind: "timeline" });
  // One sentence however many steps are late (the first one's, counting the rest): reasons stay few.
  const late = repairs.filter((r) => !r.met);
  if (late.length === 0) return report;
  const reason =
    late[0]!.reason +
    (late.length > 1 ? ` (and after ${late.length - 1} later step${late.length > 2 ? "s" : ""})` : "");
  return { ...report, verdict: Verdict.notMet, reasons: [...report.reasons, reason] };
}

/** The full evaluation: one report per scenario, then one per timeline, in input order. */
export interface EvaluationReport {
  readonly volume: string;
  readonly asOfMs: number;
  readonly acknowledged: Record<string, number>;
  readonly reports: SurvivalReport[];
}

/** Validates references, then evaluates every scenario and timeline. Pure and deterministic. */
export function evaluateState(given: EvaluationState): EvaluationReport {
  validateEvaluationState(given);
  // An unproven holder (failed retention audit) may have dropped what it claims: its claims count for nothing.
  const state = given.holders.some((h) => h.audit === AuditState.Failed)
    ? {
        ...given,
        holders: given.holders.map((h) =>
          h.audit === AuditState.Failed
            ? { ...h, claims: [], ...(h.coalesced === undefined ? {} : { coalesced: [] }) }
            : h,
        ),
      }
    : given;
  // Reports (not release decisions) may name a cut from the coalesced stream.
  const images = imagesOnly(state);
  return {
    volume: state.volume,
    asOfMs: state.asOfMs,
    acknowledged: { ...state.source.lanes },
    reports: [
      ...state.scenarios.map((s) =>
        withCoalescedStream(evaluateScenario(state, s), images && evaluateScenario(images, s)),
      ),
      ...state.timelines.map((tl, i) =>
        withCoalescedStream(
          evaluateTimeline(state, tl, `timelines[${i}]`),
          images && evaluateTimeline(images, tl, `timelines[${i}]`),
        ),
      ),
    ],
  };
}
