/** Public surface of `actors/` (each machine's module adds its own line). */
export * from "./lane-arena/index.ts";
export {
  holderMachine,
  HolderState,
  type HolderMachineInput,
  type HolderContext,
  type HolderCommand,
  type HolderEvent,
} from "./holder/holder.machine.ts";
export { startHolder, HolderStartError, type Holder } from "./holder/holder.ts";
export {
  parseHolderConfig,
  HolderConfigError,
  HolderResidency,
  type HolderConfig,
  type HolderConfigInput,
  type LaneConfig,
  type ProtectedRamEvidence,
} from "./holder/holder-config.ts";
export { HolderRejectCode, type HolderObservation, type HolderPorts } from "./holder/holder-ports.ts";
export type { PeerDirectory } from "./hop/index.ts";
export { CreditSender, DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_UNITS } from "./hop/index.ts";
export {
  volumeWriterMachine,
  WriterState,
  type WriterContext,
  type WriterEvent,
} from "./writer/volume-writer.machine.ts";
export { startVolumeWriter, type VolumeWriter } from "./writer/volume-writer.ts";
export {
  checkWriterConfig,
  WriterConfigError,
  WriterFencedError,
  WriteRejectedError,
  UnknownContractError,
  ProtectionTimeoutError,
  type LaneSpec,
  type ProtectionContract,
  type VolumeWriterConfig,
} from "./writer/writer-config.ts";
export {
  checkCoalescedStream,
  derivedLaneName,
  DEFAULT_COALESCED_SUFFIX,
  type CoalescedStreamSpec,
} from "./writer/coalesced-stream.ts";
export { type VolumeWriterPorts, type WriteAck, type WriterCut, type ShipLogEntry } from "./writer/writer-ports.ts";
export { writerStep } from "./writer/writer-step.ts";
export { initialWriterState, type WriterState as WriterData } from "./writer/writer-state.ts";
export type { WriterEffect } from "./writer/writer-effects.ts";
export { coveredByAtLeast, survivesContract, protectedSeqs } from "./writer/protection.ts";
export {
  controllerMachine,
  ControllerState,
  type ControllerContext,
  type ControllerEvent,
} from "./controller/controller.machine.ts";
export { startController, ControllerStartError, type Controller } from "./controller/controller.ts";
export {
  type ControllerConfig,
  type VolumeTopology,
  type RepairConfig,
  type StandbyHolder,
} from "./controller/controller-config.ts";
export { failuresToRepair, repairIdOf, type FailureToRepair } from "./controller/failure-repairs.ts";
export { ControllerCore } from "./controller/controller-core.ts";
export {
  COARSE_RUN_SEQS,
  MAX_AUDITS,
  type ControllerPorts,
  type ReleaseAudit,
  type HolderAdmission,
  type RepairLauncher,
} from "./controller/controller-ports.ts";
export {
  AnnouncedStandbys,
  StandbyUnavailableError,
  type AnnouncedStandbysDeps,
} from "./controller/announced-standbys.ts";
export { buildEvaluationState, releaseCandidates, type SourceProgress } from "./controller/evaluation-input.ts";
export { statusDocument } from "./controller/status-document.ts";
export {
  repairMachine,
  RepairState,
  type RepairReport,
  type RepairContext,
  type RepairOutcome,
  type RepairFailure,
} from "./repair/repair.machine.ts";
export { runRepair, runRepairTask, reportOf, repairForFailure, RepairFailedError } from "./repair/repair.ts";
export { RepairSourceLostError, RepairTimeoutError, type RepairInput } from "./repair/repair-steps.ts";
export {
  activationTransfers,
  copySources,
  laneRangesOf,
  missingCoverage,
  protectionIds,
  replacementCovers,
} from "./repair/repair-plan.ts";
export {
  initialRepairContext,
  repairOutcomeOf,
  repairReportOf,
  repairSettingsOf,
  type LaneRanges,
  type RepairSettings,
  type RepairTask,
} from "./repair/repair-state.ts";
export { repairMachineFor } from "./repair/repair-executors.ts";
export type {
  RepairPort,
  RepairPorts,
  RepairView,
  RepairHolding,
  ReplacementAdmission,
  ReplacementTransfer,
} from "./repair/repair-port.ts";
export { natsRepairPort } from "./repair/repair-port-nats.ts";
export { serveRepairTasks, type RepairWorker } from "./repair/repair-worker.ts";
export {
  ControllerRefusedError,
  outcomeFromWire,
  outcomeToWire,
  viewFromWire,
  viewToWire,
} from "./repair/repair-wire.ts";
export { inProcessRepairPort, repairViewOf } from "./controller/in-process-repair-port.ts";
export {
  checkRepairRequest,
  RepairRequestRefusedError,
  type DelegatedRepair,
  type RepairRequest,
} from "./controller/repair-request-check.ts";
export { requestRemoteRepair, type RemoteRepairTask } from "./controller/remote-repair.ts";
export { repairChildId } from "./controller/controller.machine.ts";
export { repairEstimate, type RepairEstimate } from "./repair/repair-estimate.ts";
export { holderSource, type SurvivorSource } from "./repair/survivor-source.ts";
export { serveCustodyReads, fetchUnits, FetchFailedError } from "./repair/custody-reader.ts";
export {
  recoverVolume,
  stageRecoveryDestination,
  RecoveryGapError,
  type BuildPhase,
  type BuildProgress,
  type RecoveryBase,
  type RecoveryInput,
  type RecoveryResult,
} from "./repair/volume-recovery.ts";
export { RecoveryVerifyError } from "./repair/built-volume-check.ts";
export { replicaMachine, ReplicaState, type ReplicaEvent } from "./replica/replica.machine.ts";
export { startReplica, ReplicaStartError, type Replica } from "./replica/replica.ts";
export { initialReplicaState, type ReplicaConfig, type ReplicaState as ReplicaData } from "./replica/replica-state.ts";
export { ReplicaExecutors, ReplicaRequestError, type ReplicaPorts } from "./replica/replica-executors.ts";
export { replicaStep, type ReplicaStepResult } from "./replica/replica-step.ts";
export { ReplicaRefusal, type ApplyOp, type ReplicaEffect, type ReplicaStepEvent } from "./replica/replica-effects.ts";
export {
  runCatchUp,
  CatchUpChunkError,
  type CatchUpLink,
  type CatchUpPorts,
  type CatchUpReport,
  type CatchUpStart,
} from "./replica/replica-catch-up-flow.ts";
export {
  PrimaryCatchUpService,
  startPrimaryCatchUp,
  type PrimaryCatchUpConfig,
  type PrimaryCatchUpPorts,
} from "./replica/primary-catch-up-service.ts";
export { CatchUpRefusal, CatchUpRefusedError, CatchUpUnavailableError } from "./replica/catch-up-refusal.ts";
export { replicaBarrierSpec, replicaFlushedSpec } from "./replica/replica-messages.ts";
export { commitFailover, FailoverRecordMissingError, type FailoverPlan } from "./controller/failover.ts";
export {
  checkFailoverRequest,
  FailoverRequestRefusedError,
  type FailoverRequest,
  type LaneFailover,
} from "./controller/failover-request-check.ts";
export { requestFailover } from "./controller/failover-client.ts";
export { BaseBuilder, BaseBuildTimeoutError, type BaseBuildPhase } from "./base-builder/base-builder.ts";
export { laneKey } from "./holder/holder-config.ts";
export { type PreservedRam, type PreservedUnit } from "./holder/holder-ports.ts";
export { claimIncarnation } from "./holder/incarnation.ts";
export { HANDOVER_RETRY_MS, HANDOVER_ROUNDS, type HandoverReport } from "./holder/holder-handover.ts";
export {
  placeRecoveryHolds,
  registerRecovery,
  type RecoveryRead,
  type RecoveryRegistration,
} from "./repair/recovery-registration.ts";
export { UnitOutbox } from "./writer/unit-outbox.ts";
export { countedHoldings, evaluateFromLog, failedHolders } from "./controller/log-evaluation.ts";
export { gatherHolderEvidence, type HolderEvidence } from "./repair/holder-evidence.ts";
export { LeaseKeeper, type LeaseKeeperPorts } from "./controller/lease-keeper.ts";
export {
  leaseStep,
  DEFAULT_LEASE_TIMINGS,
  type LeaseRole,
  type LeaseStep,
  type LeaseTimings,
} from "./controller/lease-step.ts";
