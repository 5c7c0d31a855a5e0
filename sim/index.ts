// Public surface of the deterministic simulator.
export { SimulatedClock, SimClockError, type SimulatedClockOptions } from "./simulated-clock.ts";
export {
  SimNetwork,
  SimEndpoint,
  PERFECT_EDGE,
  type EdgeProfile,
  type NetEvent,
  type SimNetworkOptions,
} from "./sim-network.ts";
export { subjectMatches, isPublishSubject, isSubscribeSubject } from "./subject-match.ts";
export { EventTrace, formatTraceEvent, type TraceEvent } from "./event-trace.ts";
export {
  FaultKind,
  generateFaultSchedule,
  isDestructive,
  scheduleKey,
  scheduleShape,
  type FaultEvent,
  type FaultContext,
} from "./fault-schedule.ts";
export {
  buildWorld,
  runRandom,
  type WorldSpec,
  type HolderSpec,
  type WorldTiming,
  type WorldOverrides,
} from "./world.ts";
export {
  InvariantId,
  survivingCut,
  checkStrike,
  checkReleaseCoverage,
  checkReceipts,
  checkReleased,
  checkCredits,
  type Violation,
  type WorldObservation,
  type HolderTruth,
  type CreditTruth,
  type ReceiptTruth,
} from "./invariants.ts";
export type { RunOptions, RunResult, ReleaseAuthorizer } from "./run-options.ts";
export { runActorWorld } from "./actor-runner.ts";
export { ActorWorld, SIM_EPOCH_MS } from "./actor-world.ts";
export { minimizeRun, type WorldRunner } from "./minimize.ts";
export { sweep, type SweepResult } from "./sweep.ts";
export { SimArgumentError } from "./sim-argument-error.ts";
