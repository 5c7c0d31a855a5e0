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
export { ModelHolder, modelSubject, type ModelHolderConfig, type HolderObserver } from "./model-holder.ts";
export { ModelController, type ReleaseAuthorizer, type ControllerObserver } from "./model-controller.ts";
export { runWorld, type RunOptions, type RunResult } from "./runner.ts";
export { runActorWorld } from "./actor-runner.ts";
export { ActorWorld, SIM_EPOCH_MS } from "./actor-world.ts";
export { minimizeRun, type WorldRunner } from "./minimize.ts";
export { sweep, type SweepResult } from "./sweep.ts";
export { SimArgumentError } from "./sim-argument-error.ts";
