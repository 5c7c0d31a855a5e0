import type { EvaluationReport, SteadyReport, SurvivalReport } from "../../policies/index.ts";
import type { EvaluationState } from "../../policies/index.ts";
import type {
  AuditStatus,
  FencedStatus,
  RepairStatus,
  SpendStatus,
  VolumeStatus,
} from "../../transport/protocol/index.ts";

/*
 * The `volume-status` wire kind itself lives in transport/protocol/wire/volume-status.ts; this is the
 * controller's builder of it.
 */

const pairs = (r: Record<string, number>): [string, number][] =>
  Object.entries(r).sort(([a], [b]) => a.localeCompare(b));

const isSteady = (r: SurvivalReport): r is SteadyReport =>
  typeof (r as Partial<SteadyReport>).inFlightSeqs === "number";

/**
 * Builds the status document from an evaluation (its reports steady ones when the caller applied the steady rule).
 * Pure.
 */
export function statusDocument(
  controller: string,
  controlSeq: number,
  state: EvaluationState,
  report: EvaluationReport,
  releasesCommitted: number,
  repairs: readonly RepairStatus[] = [],
  spend?: SpendStatus,
  audits?: readonly AuditStatus[],
  fenced: readonly FencedStatus[] = [],
): VolumeStatus {
  const evidence = state.holders.map((h) => {
    const newest = h.claims.reduce((m, c) => Math.max(m, c.evidence.atMs), -Infinity);
    const ageMs = Number.isFinite(newest) ? Math.max(0, state.asOfMs - newest) : -1;
    return { holder: h.id, ageMs, stale: ageMs < 0 || ageMs > state.staleAfterMs };
  });
  return {
    volume: state.volume,
    controller,
    asOfMs: state.asOfMs,
    controlSeq,
    acknowledged: pairs(report.acknowledged),
    survivingCut: survivingCut(report),
    scenarios: report.reports.map((r) => scenarioRow(r, Object.keys(report.acknowledged).length > 1)),
    evidence,
    releasesCommitted,
    repairs: [...repairs],
    ...(spend === undefined ? {} : { spend: { ...spend, deferred: spend.deferred.slice(0, 64) } }),
    ...(audits === undefined ? {} : { audits: audits.slice(0, 256) }),
    ...(fenced.length === 0 ? {} : { fenced: fenced.slice(0, 64) }),
  };
}

/** The cut every required scenario keeps (per lane, the lowest of theirs); null when one of them keeps none. */
function survivingCut(report: EvaluationReport): VolumeStatus["survivingCut"] {
  const required = report.reports.filter((r) => r.required);
  let surviving: Record<string, number> | null = { ...report.acknowledged };
  for (const r of required) {
    if (r.cut === null || surviving === null) {
      surviving = null;
      continue;
    }
    for (const [lane, seq] of Object.entries(surviving)) surviving[lane] = Math.min(seq, r.cut[lane] ?? -1);
  }
  return surviving === null ? null : pairs(surviving);
}

/** One scenario's row of the document; `multiLane`: the volume has more than one lane. */
function scenarioRow(r: EvaluationReport["reports"][number], multiLane: boolean): VolumeStatus["scenarios"][number] {
  return {
    name: r.name,
    kind: r.kind,
    required: r.required,
    cut: r.cut === null ? null : pairs(r.cut),
    // Only a coalesced cut names its stream: a document without `stream` speaks of the raw log (as before).
    ...(r.stream === "coalesced" ? { stream: r.stream } : {}),
    lostSeqs: r.lostSeqs,
    // A steady verdict (policies/steady-verdict.ts) splits the loss: writes in flight and lost ones.
    ...(isSteady(r) ? { inFlightSeqs: r.inFlightSeqs, overdueSeqs: r.overdueSeqs, lossSinceMs: r.lossSinceMs } : {}),
    lostBytes: r.lostBytes,
    oldestLostAgeMs: r.oldestLostAgeMs,
    rtoSec: r.timeToUsable?.totalSec ?? null,
    deadlineSec: r.deadlineSec,
    meetsDeadline: r.meetsDeadline,
    destination: r.destination,
    evidence: r.evidence,
    contributors: r.contributors,
    flags: r.flags,
    verdict: r.verdict,
    reasons: r.reasons,
    // Only a topology that places the control plane says what of it survives (issue #45).
    ...(r.controlPlane === undefined
      ? {}
      : {
          controlPlane: {
            lost: r.controlPlane.lost,
            logReplicas: r.controlPlane.logReplicas,
            controllers: r.controlPlane.controllers,
            keyAuthority: r.controlPlane.keyAuthority,
          },
        }),
    // Only a cut across lanes needs something to make it consistent (one lane's documents stay as they were).
    ...(multiLane ? { manifest: r.manifest, base: r.base } : {}),
  };
}
