// Public surface of the policy engine: pure functions over plain inputs, no I/O, no clock.
export { PolicyErrorCode, PolicyInputError, UnknownReferenceError, InfeasiblePlacementError } from "./policy-errors.ts";
export {
  DependencyKind,
  type Site,
  siteDomains,
  sharedDomains,
  independentUnder,
  azDiverse,
  validateSites,
  checkDependencyTag,
  checkLossDomain,
} from "./topology.ts";
export { LossKind, worseLoss, type Loss, type Scenario, type Timeline, type TimelineEvent } from "./scenario.ts";
export {
  Residency,
  EvidenceKind,
  EvidenceLabel,
  type RetainedClaim,
  type Holder,
  type BaseSnapshot,
  type ConsistencyManifest,
  type KeyAuthority,
  type MetadataQuorum,
  type Link,
  type CommitRun,
  type RecoveryParams,
  type PendingForward,
  type PitrPin,
  type RecoveryInFlight,
  type EvaluationState,
} from "./evaluation-state.ts";
export { evidenceLabel, applyLosses, initialView, type SurvivorView, type LiveClaim } from "./survivor-view.ts";
export { manifestSurvives } from "./manifest-survival.ts";
export { foldCommitHistory, tallyCommits, type CommitTally } from "./commit-log.ts";
export { commitHistoryBounds } from "./commit-history-bounds.ts";
export { CutStream, lossReasons, SurvivalFlag, type LossFigures, type SurvivalReport } from "./survival-report.ts";
export {
  DEFAULT_VERDICT_TIMING,
  splitLoss,
  steadyVerdicts,
  type LossSplit,
  type SteadyReport,
  type VerdictMemory,
  type VerdictTiming,
} from "./steady-verdict.ts";
export {
  controlPlaneSurvival,
  ControlPlaneRole,
  type ControlPlanePlacement,
  type ControlPlaneMember,
  type ControlPlaneFinding,
} from "./control-plane.ts";
export { withCoalescedStream } from "./coalesced-cut.ts";
export { recoveryTime, type RecoveryTime, type RecoveryPhases } from "./recovery-time.ts";
export { evaluateScenario, evaluateTimeline, evaluateState, type EvaluationReport } from "./evaluate.ts";
export { validateEvaluationState } from "./state-validation.ts";
export {
  evaluationStateSchema,
  parseEvaluationState,
  parseWith,
  fieldPath,
  type EvaluationStateJson,
} from "./state-schema.ts";
export {
  ReleaseDenial,
  authorizeReleases,
  withReleases,
  keepsCut,
  requiredReports,
  type ReleaseRequest,
  type ReleaseDecision,
} from "./release.ts";
export {
  checkProtectedRamAdmission,
  checkAllProtectedRam,
  parseProtectedRamInput,
  requireSharedCapacities,
  type ProtectedRamNode,
  type DrainCapacities,
  type ProtectedRamVerdict,
} from "./protected-ram.ts";
export { Bytes, memoryNeeded, type MemorySizingInput, type MemorySizing } from "./sizing.ts";
export {
  transferCost,
  legMonthlyCost,
  streamCost,
  planBudgets,
  applySpendCeiling,
  BudgetKind,
  type Charge,
  type PricedEdge,
  type LegCost,
  type BudgetInput,
  type BudgetPlan,
  type CopyPlan,
  type CopyOutcome,
} from "./cost.ts";
export {
  placeCustody,
  GraphShape,
  type PlacementInput,
  type PlacementCandidate,
  type MeasuredEdge,
  type PlacementScenario,
  type PlacedEdge,
  type CustodyGraph,
  type PlacementResult,
} from "./placement.ts";
export { placementInputSchema, parsePlacementInput, type PlacementInputJson } from "./placement-schema.ts";
export { policyJsonSchemas } from "./json-schemas.ts";
export { coverageGaps, ramSurvivesAt } from "./coverage-gaps.ts";
export { ProtectionStatus, protectedCreditHeadroom, protectionStatus } from "./protected-ram.ts";
export { releaseEventFor, snapshotIdOf } from "./release-event.ts";
export { withoutStaleClaims } from "./release.ts";
export { SpendGuard, parseSpendConfig, type SpendConfigInput, type SpendReport } from "./spend-budget.ts";
export { AUDIT_DIGEST_BYTES, auditDigest, auditedUnits, type AuditDigest, type AuditedUnit } from "./audit-digest.ts";
export { planAudit, sampleSeqs, type AuditPlan } from "./audit-sampling.ts";
export {
  AuditOutcome,
  auditVerdict,
  type AuditAnswer,
  type AuditVerdict,
  type AuditVerdictInput,
} from "./audit-verdict.ts";
export { AuditBook, AuditBudget, AuditState, type HolderAuditRecord } from "./audit-book.ts";
export {
  RouteTable,
  ValueSource,
  burstThroughput,
  freshRoutesBySitePair,
  planBytes,
  planProbeRound,
  sitePairKey,
  summarizeRtts,
  withMeasuredEdges,
  withMeasuredLinks,
  type EdgeSource,
  type LinkLoad,
  type PeerProbePlan,
  type ProbeShape,
  type RouteMeasurement,
} from "./route-measurements.ts";
export { PathEstimate, type PathEstimateValue, type PathEstimateWindow } from "./path-estimate.ts";
export { repairWindowFinding, sharedRepairBandwidth, type RepairWindowFinding } from "./repair-window.ts";
export {
  choosePersistenceTargets,
  type PersistenceTargetInput,
  type PersistenceTargets,
} from "./persistence-targets.ts";
export { imageReleases, type ImageRelease } from "./image-release.ts";
