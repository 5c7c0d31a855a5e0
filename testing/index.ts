/**
 * Public surface of `testing/`: the test kit used by tests, demo and benches (nats-server launcher,
 * single server and supercluster; role processes; a Prometheus server). Of our folders it imports only `transport/`
 * (the
 * server configuration) and `core/`, not the actors, runtime or deploy, so a process that only needs
 * a server stays small; the harness deployments' role files live in `harness/`.
 */
export { reapOnExit } from "./child-reaper.ts";
export { CLI_BUNDLE, custodyCommand, ensureCliBundle } from "./custody-command.ts";
export { scriptCommand } from "./script-command.ts";
export { repoRoot } from "./repo-root.ts";
export {
  freePort,
  natsServerBin,
  regionReady,
  startNatsServer,
  startSupercluster,
  type SuperclusterHandle,
} from "./nats-server.ts";
export { RoleProcess, pidAlive } from "./role-process.ts";
export { DeployedProcess, type Ended } from "./deployed-process.ts";
export {
  prometheusBin,
  promtoolBin,
  startPrometheus,
  type PrometheusAlert,
  type PrometheusHandle,
  type PrometheusSample,
  type PrometheusTarget,
} from "./prometheus.ts";
export { loopbackDeployment, type LoopbackDeploymentOptions } from "./loopback-deployment.ts";
export { getJson, waitForRegions, type ControlServerEntry } from "./regions-ready.ts";
export {
  DEPLOYMENT_READY_MS,
  initAndStartNats,
  initAndStartNatsOf,
  type DeploymentIndex,
  type OperatorCustody,
  type RoleEntry,
  type StartedNats,
} from "./deployment-start.ts";
