/** Public surface of `testing/`: the test kit (nats-server launcher, role files, processes) used by tests, demo and benches. */
export { reapOnExit } from "./child-reaper.ts";
export { CLI_BUNDLE, custodyCommand, ensureCliBundle } from "./custody-command.ts";
export { repoRoot } from "./repo-root.ts";
export { harnessControllerConfig, harnessSite } from "./harness-topology.ts";
export { freePort, natsServerBin, regionReady, startNatsServer, startSupercluster, type SuperclusterHandle } from "./nats-server.ts";
export { bootstrapControlLog, writeHolderRole, writeWriterRole } from "./role-files.ts";
export { RoleProcess, pidAlive } from "./role-process.ts";
export { DeployedProcess, type Ended } from "./deployed-process.ts";
export { loopbackDeployment, type LoopbackDeploymentOptions } from "./loopback-deployment.ts";
export { getJson, waitForRegions } from "./regions-ready.ts";
export { DEPLOYMENT_READY_MS, initAndStartNats, type DeploymentIndex, type OperatorCustody, type RoleEntry, type StartedNats } from "./deployment-start.ts";
