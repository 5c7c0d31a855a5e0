// Public surface of demo/: the deployment file, the launcher pieces, the failure script, and the
// pure parts the CLI and report use (link shaping, trace trees, tables, timeline).
export { DeploymentError, deploymentSchema, parseDeployment, loadDeployment, topologyOf, sitesOf, edgeBetween, siteOfActor, scenarioNames, type Deployment, type DeploymentEdge, type DeploymentHolder } from "./deployment.ts";
export { deploymentRoute } from "./deployment-route.ts";
export { LinkQueue, LinkProfileError, ShapedTransport, type LinkProfile, type LinkRoute, type ShapedTransportOptions } from "./link-shaper.ts";
export { ProcessRegistry, SpawnError, pidAlive, type ManagedProcess } from "./process-registry.ts";
export { startRegions, checkNatsServer, NatsLaunchError, type RegionEndpoint } from "./nats-launcher.ts";
export { launchNetwork, killRegion, stopActors, makeRunDir, type RunningNetwork } from "./network-launcher.ts";
export { ActorClient, ActorCallError, ActorRole, type ActorProcessConfig } from "./actor-protocol.ts";
export { runDemo, type DemoOptions, type DemoResult, type DemoEvent } from "./demo-script.ts";
export { buildTraceTree, readRunSpans, traceRows, TraceQueryError, type TraceNode, type TraceTree } from "./trace-tree.ts";
export { renderReport } from "./report-html.ts";
export { formatScenarioTable, formatCostTable, legRow, lostRange, type ScenarioRow, type LegRow } from "./scenario-table.ts";
export { formatProgress, type Progress } from "./progress-line.ts";
export { survivingCutAt, type TimelineSample, type TimelineScenario, type TimelineBase } from "./custody-timeline.ts";
export { blockData, lbaOf, contentAt, type AckedWrite } from "./workload.ts";
