/**
 * Public surface of `actors/runtime/`: running one role as a process (`custody run`), its config,
 * stats and metrics.
 */
export { ROLE_NODE_FLAGS } from "./role-node-flags.ts";
export { DATA_KEY_BYTES, InvalidKeyFileError, readDataKeyFile } from "./data-key-file.ts";
export { readPublicKeyHex } from "./control-trust-files.ts";
export { serveMetrics, type MetricsOptions, type MetricsSource } from "./metrics-endpoint.ts";
export { checkMetricsPortFree, MetricsPortInUseError } from "./metrics-port-check.ts";
export { gatherProcessStats, listProcesses, type ProcessStats } from "./process-stats.ts";
export {
  baseBuilderRoleSchema,
  controllerRoleSchema,
  holderRoleSchema,
  metricsSchema,
  natsRoleSchema,
  readOperatorConfig,
  readRoleConfig,
  repairRoleSchema,
  RoleConfigError,
  writerRoleSchema,
  type MetricsConfig,
  type NatsRoleConfig,
  type RepairRoleConfig,
} from "./role-config.ts";
export { runBaseBuilder } from "./run-base-builder.ts";
export { runController, runLeasedController, type RunningLeasedController } from "./run-controller.ts";
export { runRepairWorker, type RunningRepairWorker } from "./run-repair.ts";
export { ConnectionLostError, runHolder } from "./run-holder.ts";
export { HolderFencedError } from "./holder-fencing.ts";
export {
  currentLock,
  lockStateDir,
  StateDirLockedError,
  LOCK_PREFIX,
  type StateDirLock,
  type LockHolder,
} from "./state-dir-lock.ts";
export { runWriter } from "./run-writer.ts";
export { readAckLog, workloadBlock, workloadWrite, type AckedWrite } from "./workload.ts";
export { connectRole } from "./connect.ts";
export { flatRuns, receiptedKey, runsOf } from "./custody-ranges.ts";
