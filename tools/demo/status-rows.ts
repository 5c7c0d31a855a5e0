/**
 * The scenario table of one run (pure): every scenario the controller evaluates for the first
 * volume, from the survivors' settled receipts, with the recovered cut where the run played it
 * (the strike's scenario).
 */
import type { ScenarioRow } from "./scenario-table.ts";
import { lostRange } from "./scenario-table.ts";
import type { RunResult } from "./strike-run.ts";

/** Rows of `run`'s settled status; the struck scenario carries the observed cut and recovery time. */
export function statusRows(run: Pick<RunResult, "outcomes" | "deployment" | "status" | "scenario">): ScenarioRow[] {
  const o = run.outcomes.find((x) => x.volume === run.deployment.volume)!;
  return run.status.scenarios.map((s) => {
    const cut = s.cut?.[0]?.[1] ?? null;
    const played = s.name === run.scenario;
    return {
      scenario: s.name,
      required: s.required,
      predictedCut: cut,
      observedCut: played ? o.recoveredCut : undefined,
      acknowledged: o.acknowledged,
      lostRange: lostRange(cut, o.acknowledged),
      rpoSeqs: s.lostSeqs,
      rpoBytes: s.lostBytes,
      rpoAgeMs: s.oldestLostAgeMs,
      rtoEstimateSec: s.rtoSec,
      rtoMeasuredSec: played ? o.recoverySec : undefined,
      contributors: s.contributors,
    };
  });
}
