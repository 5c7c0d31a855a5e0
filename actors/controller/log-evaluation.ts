import { HolderStatus, type ControlState, type Holding } from "../../custody/index.ts";
import { evaluateState, type EvaluationReport, type EvaluationState } from "../../policies/index.ts";
import type { VolumeTopology } from "./controller-config.ts";
import { buildEvaluationState, holdsAsPolicy, type SourceProgress } from "./evaluation-input.ts";
import { protectedRamOverBound } from "./protected-ram-check.ts";

/**
 * The controller's view of custody as a function of the control log and verified holdings only:
 * what the controller evaluates each round, and what `custody status` / `custody recover` evaluate
 * themselves when no controller answers. One code path, so both name the same surviving cut.
 */

/**
 * Holdings that speak for their holder (pure): only the admitted incarnation's — the moment a newer
 * one is admitted, what the previous one claimed (its RAM is gone) stops counting — less what the
 * control log released; `unproven` holders (failed retention audit) count for nothing.
 */
export function countedHoldings(
  holdings: readonly Holding[],
  s: ControlState,
  unproven: (holderId: string) => boolean = () => false,
): Holding[] {
  return holdings
    .filter((h) => s.holders[h.holderId]?.incarnation === h.incarnation && !unproven(h.holderId))
    .map((h) => {
      const gone = s.obligations[h.obligationId]?.released[h.holderId];
      return gone ? { ...h, retained: h.retained.subtract(gone) } : h;
    });
}

/** Holders the control log declared failed (their memory is gone). Pure. */
export function failedHolders(s: ControlState): Set<string> {
  return new Set(
    Object.values(s.holders)
      .filter((h) => h.status === HolderStatus.failed)
      .map((h) => h.holderId),
  );
}

/**
 * The evaluation of `topo`'s volume from the folded control log `s` and verified `holdings` (a
 * receipt ledger's), as of `asOfMs`: the log's holds as pins and recoveries, protected RAM over
 * its drain bound dropped, then every scenario and timeline evaluated. Pure. What a controller adds
 * beyond this (measured routes, retention sightings, its own repairs in flight) changes release
 * decisions and estimates, not which cut the surviving claims make.
 */
export function evaluateFromLog(
  topo: VolumeTopology,
  s: ControlState,
  holdings: readonly Holding[],
  progress: SourceProgress,
  asOfMs: number,
): { state: EvaluationState; report: EvaluationReport } {
  const counted = countedHoldings(
    holdings.filter((h) => h.volume === topo.volume),
    s,
  );
  const held = holdsAsPolicy(s.holds, topo.volume, Object.keys(topo.holderSites));
  const layout = topo.protectedRam;
  const state = buildEvaluationState(topo, counted, progress, asOfMs, failedHolders(s), {
    pins: held.pins,
    recoveries: held.recoveries,
    protectedOverBound: layout === undefined ? undefined : protectedRamOverBound(layout, counted, progress.commits),
  });
  return { state, report: evaluateState(state) };
}
