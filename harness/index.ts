/**
 * Public surface of `harness/`: the role files and topology of the harness deployments that chaos,
 * soak, bench:e2e and the role tests start (holders, a writer and a controller over a signed
 * control log). Kept out of `testing/` because it needs the product (deploy, runtime, custody,
 * policies), and the NATS kit in `testing/` must stay loadable without it.
 */
export { harnessControllerConfig, harnessSite, type HarnessControllerSpec } from "./harness-topology.ts";
export {
  bootstrapControlLog,
  writeHolderRole,
  writeWriterRole,
  type HarnessHolder,
  type HarnessWriter,
} from "./role-files.ts";
