// What other folders may use from deploy/: the deployment file, its plan, and the control-log bootstrap.
export { DeploymentError, deploymentSchema, parseDeployment, type Deployment, type DeploymentHolder, type DeploymentRegion, type DeploymentVolume } from "./deployment-schema.ts";
export { BOOTSTRAP_FILE, planDeployment, ROLES_INDEX, roleNats, volumeLanes, type BootstrapPlan, type DeploymentPlan, type KeySource, type PlannedFile, type PlannedRole } from "./deployment-plan.ts";
export { natsServerConfig, regionUrl } from "./nats-server-config.ts";
export { holderRoleConfig, writerRoleConfig, type HolderLaneInput, type HolderRoleInput, type RoleSite, type WriterRoleInput } from "./role-configs.ts";
export { parseBootstrap } from "./bootstrap-file.ts";
export { applyBootstrap, type BootstrapResult } from "./control-bootstrap.ts";
