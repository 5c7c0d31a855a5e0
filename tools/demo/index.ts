// Public surface of tools/demo/: the deployment file, the launcher pieces, the failure script, and the
// pure parts the report uses (link shaping, tables, timeline; trace trees from actors/runtime/telemetry/).
export {
  DeploymentError,
  deploymentSchema,
  parseDeployment,
  loadDeployment,
  topologyOf,
  sitesOf,
  edgeBetween,
  siteOfActor,
  scenarioNames,
  volumesOf,
  type Deployment,
  type DeploymentEdge,
  type DeploymentHolder,
} from "./deployment.ts";
export {
  LinkQueue,
  LinkProfileError,
  ShapedTransport,
  type LinkProfile,
  type LinkRoute,
  type ShapedTransportOptions,
} from "../../transport/index.ts";
export { ProcessRegistry, SpawnError, pidAlive, type ManagedProcess } from "./process-registry.ts";
export { startRegions, checkNatsServer, NatsLaunchError, type RegionEndpoint } from "./nats-launcher.ts";
export {
  launchNetwork,
  strikeRegions,
  makeRunDir,
  CustodyCommandError,
  type RunningNetwork,
  type RoleInstance,
} from "./network-launcher.ts";
export { custodyDeploymentOf, writerIdOf, controllerIdOf, ackLogOf, DEMO_CONTROL_LOG } from "./custody-deployment.ts";
export { OperatorView } from "./operator-view.ts";
export { runDemo, type DemoOptions, type DemoResult, type ScenarioOutcome } from "./demo-script.ts";
export { strikeRun, type DemoEvent, type RunResult, type VolumeOutcome } from "./strike-run.ts";
export { settledSurvivors, unaccounted, SettleTimeoutError, type HolderStats, type ControllerView } from "./settle.ts";
export { withoutHolder } from "./waypoint-variant.ts";
export { statusRows } from "./status-rows.ts";
export {
  buildTraceTree,
  pathOf,
  readRunSpans,
  STRIKE_SPAN,
  strikeAfter,
  traceRows,
  TraceQueryError,
  unitFate,
  type FateHolder,
  type FateStrike,
  type PathHolder,
  type TraceNode,
  type TraceTree,
  type UnitFate,
} from "../../actors/runtime/telemetry/index.ts";
export { recordStrikeSpan, type StrikeRecord } from "./strike-span.ts";
export { renderReport } from "./report-html.ts";
export {
  formatScenarioTable,
  formatCostTable,
  formatStrikeTable,
  legRow,
  lostRange,
  type ScenarioRow,
  type LegRow,
  type StrikeRow,
} from "./scenario-table.ts";
export { formatProgress, type Progress } from "./progress-line.ts";
export { survivingCutAt, type TimelineSample, type TimelineScenario, type TimelineBase } from "./custody-timeline.ts";
export {
  blockData,
  lbaOf,
  seedOf,
  lsnOffset,
  contentThrough,
  readVolumeAckLog,
  workloadContentThrough,
  WorkloadOrderError,
  type AckedWrite,
} from "./workload.ts";
