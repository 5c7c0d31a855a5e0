/**
 * Public surface of `test/kit/`: the one test kit of tests, tools (demo, benches, chaos, soak,
 * attack) and the role tests — real nats-server processes (one server, or regions joined by
 * gateways), role processes started from the bundled CLI, a Prometheus server, the harness
 * deployments' role files and topology (holders, a writer and a controller over a signed control
 * log), and the AVA glue (servers per test, the Transport conformance suite).
 *
 * Not exported here: `custody-cli.ts`, which runs the `custody` CLI inside the test process; it is
 * the one kit module that imports `cli/`, and tools load this index but never the CLI. Tests import
 * it (and the other single-purpose helpers: until.ts, prometheus-rules.ts, ...) by file.
 */
export { reapOnExit } from "./child-reaper.ts";
export { CLI_BUNDLE, custodyCommand, ensureCliBundle } from "./custody-command.ts";
export { scriptCommand } from "./script-command.ts";
export { repoRoot } from "./repo-root.ts";
export * from "./nats-server.ts";
export * from "./nats-test-context.ts";
export * from "./transport-conformance.ts";
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
export { harnessControllerConfig, harnessSite, type HarnessControllerSpec } from "./harness-topology.ts";
export {
  bootstrapControlLog,
  writeHolderRole,
  writeWriterRole,
  type HarnessHolder,
  type HarnessWriter,
} from "./role-files.ts";
