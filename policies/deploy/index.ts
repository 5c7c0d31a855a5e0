// What other folders may use from policies/deploy/: the deployment file, its plan, and the control-log bootstrap.
export {
  DeploymentError,
  deploymentSchema,
  type Deployment,
  type DeploymentHolder,
  type DeploymentRegion,
  type DeploymentVolume,
} from "./deployment-schema.ts";
export { parseDeployment } from "./deployment-check.ts";
export { volumeLanes } from "./volume-lanes.ts";
export {
  BOOTSTRAP_FILE,
  OPERATOR_ID,
  planDeployment,
  ROLES_INDEX,
  roleNats,
  tlsOutputDir,
  type BootstrapPlan,
  type DeploymentPlan,
  type KeySource,
  type PlannedControlServer,
  type PlannedFile,
  type PlannedRole,
  type SecuritySource,
} from "./deployment-plan.ts";
export {
  CA_FILE,
  deploymentPrincipals,
  NKEY_SEED_FILE,
  OPERATOR_NATS_FILE,
  regionServerIdentities,
  type DeploymentPrincipal,
  type NkeyUserKey,
} from "./deployment-security.ts";
export { controlServerConfig, natsServerConfig, regionUrl } from "./nats-server-config.ts";
export {
  CONTROL_LOG_REPLICAS,
  controlLogTopology,
  type ControlLogTopology,
  type ControlServer,
} from "./control-servers.ts";
export { controlClusterName } from "./control-cluster-name.ts";
export {
  holderRoleConfig,
  writerRoleConfig,
  type HolderLaneInput,
  type HolderRoleInput,
  type RoleSite,
  type WriterRoleInput,
} from "./role-configs.ts";
export { parseBootstrap } from "./bootstrap-file.ts";
export { applyBootstrap, type BootstrapResult } from "./control-bootstrap.ts";
export {
  controlPlaneOf,
  controlPlaneLosses,
  controlPlaneLossMessage,
  ControlPlaneLostError,
  keyAuthoritiesOf,
  type ControlPlaneLoss,
} from "./control-plane-placement.ts";
