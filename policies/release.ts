import { RangeSet } from "../lanes/index.ts";
import type { EvaluationState } from "./evaluation-state.ts";
import { evaluateScenario, evaluateTimeline } from "./evaluate.ts";
import type { SurvivalReport } from "./survival-report.ts";
import { UnknownReferenceError } from "./policy-errors.ts";
import { validateEvaluationState } from "./state-validation.ts";
import { evidenceLabel } from "./survivor-view.ts";
import { survivingRanges } from "./surviving-ranges.ts";

/** A holder asking to drop `ranges` of `lane` from every residency it keeps them in. */
export interface ReleaseRequest {
  readonly holder: string;
  readonly lane: string;
  readonly ranges: RangeSet;
}

/** Why a release was refused. */
export const ReleaseDenial = {
  notRetained: "not_retained",
  retentionWindow: "retention_window",
  pitrPin: "pitr_pin",
  recoveryInFlight: "recovery_in_flight",
  noSuccessor: "no_successor",
  scenarioBelowCut: "scenario_below_cut",
  /** A required scenario would lose acknowledged sequences it still has, even above a hole in its cut. */
  scenarioLosesCoverage: "scenario_loses_coverage",
} as const;
export type ReleaseDenial = (typeof ReleaseDenial)[keyof typeof ReleaseDenial];

/** The verdict on one request; `scenarios` names the required scenarios the drop would break. */
export interface ReleaseDecision {
  readonly request: ReleaseRequest;
  readonly allowed: boolean;
  readonly reasons: ReleaseDenial[];
  readonly scenarios: string[];
}

/** The state with the given ranges dropped from the holders' claims (claims left empty disappear). Pure. */
export function withReleases(state: EvaluationState, releases: readonly ReleaseRequest[]): EvaluationState {
  if (releases.length === 0) return state;
  return {
    ...state,
    holders: state.holders.map((h) => {
      const mine = releases.filter((r) => r.holder === h.id);
      if (mine.length === 0) return h;
      const claims = h.claims
        .map((c) => {
          let ranges = c.ranges;
          for (const r of mine) if (r.lane === c.lane) ranges = ranges.subtract(r.ranges);
          return { ...c, ranges };
        })
        .filter((c) => !c.ranges.isEmpty);
      return { ...h, claims };
    }),
  };
}

/**
 * The state with every claim whose evidence is stale removed. A release may rely only on fresh
 * evidence: a holder that has been silent longer than `staleAfterMs` may have lost what it claimed
 * (a crash nobody has declared yet), and dropping the last live copy on its word loses data. Pure.
 */
export function withoutStaleClaims(state: EvaluationState): EvaluationState {
  let changed = false;
  const holders = state.holders.map((h) => {
    const claims = h.claims.filter((c) => evidenceLabel(c, state.asOfMs, state.staleAfterMs) !== "stale");
    if (claims.length === h.claims.length) return h;
    changed = true;
    return { ...h, claims };
  });
  return changed ? { ...state, holders } : state;
}

/** The required scenarios' and timelines' reports, in input order. */
export function requiredReports(state: EvaluationState): SurvivalReport[] {
  return [
    ...state.scenarios.filter((s) => s.required).map((s) => evaluateScenario(state, s)),
    ...state.timelines.filter((t) => t.required).map((t, i) => evaluateTimeline(state, t, `timelines[${i}]`)),
  ];
}

/** True when `after` keeps at least `before`'s cut on every lane (no cut before means nothing to keep). */
export function keepsCut(before: SurvivalReport, after: SurvivalReport): boolean {
  if (before.cut === null) return true;
  if (after.cut === null) return false;
  return Object.entries(before.cut).every(([lane, seq]) => (after.cut![lane] ?? -1) >= seq);
}

/**
 * Decides pending releases TOGETHER, in request order: a request is granted only if, with every
 * earlier grant already applied, the holder retains the ranges, no retention window, PITR pin or
 * in-flight recovery covers them, a successor (another holder's retained copy or a base snapshot)
 * still covers them, and every required scenario and timeline keeps the cut it has now. So two
 * holders can never both release relying on each other. Successors and the cuts after the release
 * count fresh evidence only (see `withoutStaleClaims`); the cuts to keep count everything, so a
 * cut that rests on stale evidence blocks the release instead of being traded away. Pure; throws
 * UnknownReferenceError for an unknown holder.
 */
export function authorizeReleases(state: EvaluationState, requests: readonly ReleaseRequest[]): ReleaseDecision[] {
  validateEvaluationState(state);
  requests.forEach((r, i) => {
    if (!state.holders.some((h) => h.id === r.holder))
      throw new UnknownReferenceError(`releases[${i}].holder`, r.holder);
    if (!(r.lane in state.source.lanes)) throw new UnknownReferenceError(`releases[${i}].lane`, r.lane);
  });
  const baseline = requiredReports(state);
  const requiredScenarios = state.scenarios.filter((s) => s.required);
  const fresh = withoutStaleClaims(state);
  const granted: ReleaseRequest[] = [];
  return requests.map((req) => {
    const current = withReleases(fresh, granted);
    const reasons = new Set<ReleaseDenial>();
    const holder = withReleases(state, granted).holders.find((h) => h.id === req.holder)!;
    const held = holder.claims.filter((c) => c.lane === req.lane);
    let retained = RangeSet.EMPTY;
    for (const c of held) retained = retained.union(c.ranges);
    if (!retained.coversAll(req.ranges)) reasons.add(ReleaseDenial.notRetained);
    if (
      held.some(
        (c) => c.retainUntilMs !== undefined && c.retainUntilMs > state.asOfMs && c.ranges.intersects(req.ranges),
      )
    ) {
      reasons.add(ReleaseDenial.retentionWindow);
    }
    if (state.pins.some((p) => p.holder === req.holder && p.lane === req.lane && p.ranges.intersects(req.ranges)))
      reasons.add(ReleaseDenial.pitrPin);
    if (
      state.recoveries.some(
        (r) =>
          r.lane === req.lane &&
          r.ranges.intersects(req.ranges) &&
          (r.sources === undefined || r.sources.includes(req.holder)),
      )
    ) {
      reasons.add(ReleaseDenial.recoveryInFlight);
    }
    // A successor is necessary (someone else still has it, or a base already includes it) ...
    let successor = RangeSet.EMPTY;
    for (const h of current.holders)
      if (h.id !== req.holder) for (const c of h.claims) if (c.lane === req.lane) successor = successor.union(c.ranges);
    for (const b of current.bases) {
      const through = b.cut[req.lane];
      if (through !== undefined && through >= 0) successor = successor.union(RangeSet.of(0, through));
    }
    if (!successor.coversAll(req.ranges)) reasons.add(ReleaseDenial.noSuccessor);
    // ... but not sufficient: every required scenario must keep its cut with all grants so far.
    const next = withReleases(current, [req]);
    const after = requiredReports(next);
    const broken = baseline.filter((b, i) => !keepsCut(b, after[i]!)).map((b) => b.name);
    if (broken.length > 0) reasons.add(ReleaseDenial.scenarioBelowCut);
    // A cut stuck below a hole must not let the ranges above it go: once the hole is refilled
    // they are the cut. Every required scenario keeps every acknowledged sequence it still has.
    const acked = RangeSet.of(0, state.source.lanes[req.lane] ?? 0);
    for (const s of requiredScenarios) {
      const had = survivingRanges(state, s.losses, req.lane).intersect(req.ranges).intersect(acked);
      if (broken.includes(s.name) || survivingRanges(next, s.losses, req.lane).coversAll(had)) continue;
      reasons.add(ReleaseDenial.scenarioLosesCoverage);
      broken.push(s.name);
    }
    const allowed = reasons.size === 0;
    if (allowed) granted.push(req);
    return { request: req, allowed, reasons: [...reasons].sort(), scenarios: broken };
  });
}
