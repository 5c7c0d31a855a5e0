import { createPublicKey, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import {
  applyBootstrap,
  BOOTSTRAP_FILE,
  controlPlaneLosses,
  controlPlaneLossMessage,
  ControlPlaneLostError,
  DeploymentError,
  OPERATOR_NATS_FILE,
  parseBootstrap,
  parseDeployment,
  planDeployment,
  regionServerIdentities,
  ROLES_INDEX,
  tlsOutputDir,
  type BootstrapPlan,
  type DeploymentPlan,
  type KeySource,
  type SecuritySource,
} from "../../policies/deploy/index.ts";
import { makeCertificates } from "../../transport/security/index.ts";
import { nkeys } from "@nats-io/transport-node";
import { connectOperator, withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";
import { generateHolderKeyPair, rawPublicKey } from "../../custody/index.ts";
import { operatorAccess } from "../operator-signing.ts";
import { closeNats } from "../../transport/index.ts";
import { initJetStreamControlLog } from "../../transport/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import { cliIo } from "../cli-io.ts";
import { readJsonFile } from "./policy.ts";

/** Fresh random keys: Ed25519 receipt keys for holders, 32-byte data keys for volumes. */
const randomKeys: KeySource = {
  holderKey() {
    const kp = generateHolderKeyPair();
    return { pkcs8: new Uint8Array(kp.privateKey.export({ format: "der", type: "pkcs8" })), publicRaw: kp.publicKey };
  },
  dataKey: () => new Uint8Array(randomBytes(32)),
};

/** Reads the deployment or bootstrap file `file` with `parse`; a refusal names the file, its code kept. */
function readDeploymentFile<T>(file: string, parse: (raw: unknown) => T): T {
  const raw = readJsonFile(file);
  try {
    return parse(raw);
  } catch (err) {
    if (err instanceof DeploymentError) throw new DeploymentError(`${file}: ${err.message}`, { ...err.detail, file });
    throw err;
  }
}

/** A new nkey user; its seed is wiped from the key pair once read. */
function newNkeyUser(): { seed: string; publicKey: string } {
  const kp = nkeys.createUser();
  try {
    return { seed: new TextDecoder().decode(kp.getSeed()), publicKey: kp.getPublicKey() };
  } finally {
    kp.clear();
  }
}

/**
 * `custody init <deployment.json> --out DIR`: validates the deployment and writes per role instance
 * `roles/<instance>/config.json` with its keys (0600), per region `nats/<region>.conf`,
 * `bootstrap.json` and `roles.json`. Secured (the default): first a CA and a certificate per region
 * (`nats/tls/`, openssl), then an nkey seed per role instance and for the operator (`nats.nk`,
 * 0600), the CA beside each, and `operator/nats.json`, the operator commands' connection. Refuses an
 * output that already holds a deployment: new keys would not match the ones already admitted.
 *
 * `custody bootstrap <bootstrap.json> --server URL`: creates the region's control stream when it is
 * not there yet (as `custody log init` does), then commits, signed with the operator's key, the
 * controllers' keys, the first incarnations and the obligations; what is already there is skipped.
 */
export function register(program: Command): void {
  registerInit(program);
  registerBootstrap(program);
}

/** `custody init`: see register. */
function registerInit(program: Command): void {
  program
    .command("init")
    .description("write role configs, keys, nats-server configs and the control-log bootstrap of a deployment")
    .argument("<deployment.json>", "the deployment: regions, sites, holders, volumes, controllers, baseBuilders")
    .requiredOption("--out <dir>", "output directory")
    .option("--json", "one JSON object on one line")
    .option(
      "--allow-control-plane-loss",
      "write the deployment even when a required scenario destroys its control-log quorum, every controller of " +
        "a volume, or its key authority (each is printed as a warning)",
    )
    .action(action(runInit));
}

type InitOptions = OutputOptions & { out: string; allowControlPlaneLoss?: boolean };

/** Checks the deployment and where it goes, plans it (making the certificates first), writes it, prints it. */
async function runInit(file: string, o: InitOptions): Promise<void> {
  const d = readDeploymentFile(file, parseDeployment);
  const out = resolve(o.out);
  if (existsSync(join(out, ROLES_INDEX)))
    throw new DeploymentError(`${out} already holds a deployment (${ROLES_INDEX}); choose another --out`, {
      path: "out",
    });
  // A required scenario that loses the control plane is a promise nobody could keep: refused
  // unless the operator says so.
  const controlLosses = controlPlaneLosses(d);
  if (controlLosses.length > 0 && o.allowControlPlaneLoss !== true) throw new ControlPlaneLostError(controlLosses);
  let security: SecuritySource | undefined;
  if (d.security !== "none") {
    // Planned once without certificates first: a deployment the plan refuses leaves nothing behind.
    planDeployment(d, out, randomKeys, { nkeyUser: newNkeyUser, caPem: "" });
    const certs = await makeCertificates(tlsOutputDir(out), regionServerIdentities(d));
    security = { nkeyUser: newNkeyUser, caPem: readFileSync(certs.caFile, "utf8") };
  }
  const plan = planDeployment(d, out, randomKeys, security);
  writePlannedFiles(plan);
  // A control log with a single replica is a choice the operator sees (stderr, so --json stays one line).
  for (const w of plan.warnings) cliIo().stderr(`warning: ${w}\n`);
  for (const l of controlLosses)
    cliIo().stderr(
      `warning: control_plane_lost allowed: ` +
        `${controlPlaneLossMessage(l).replace(/ or pass --allow-control-plane-loss$/, "")}\n`,
    );
  printResult(
    o,
    {
      roles: plan.roles,
      natsServers: plan.natsServers,
      controlServers: plan.controlServers,
      bootstrap: join(out, BOOTSTRAP_FILE),
      warnings: plan.warnings,
    },
    plan.roles.map((r) => ({ instance: r.instance, role: r.role, region: r.region, config: r.config })),
    `${plan.roles.length} role instances, ${plan.natsServers.length + plan.controlServers.length} ` +
      `nats-server configs (${plan.controlServers.length} for the control log's replicas) in ${out}`,
  );
}

/** Writes every file of the plan with its mode (keys 0600), its directories 0700. */
function writePlannedFiles(plan: DeploymentPlan): void {
  for (const f of plan.files) {
    mkdirSync(dirname(f.path), { recursive: true, mode: 0o700 });
    writeFileSync(f.path, f.contents, { mode: f.mode });
    chmodSync(f.path, f.mode); // the umask never loosens a key
  }
}

/** `custody bootstrap`: see register. */
function registerBootstrap(program: Command): void {
  withOperatorConnection(
    program
      .command("bootstrap")
      .description(
        "admit the holders' first incarnations and create the obligations `custody init` planned (skips what " +
          "the control log has)",
      )
      .argument("<bootstrap.json>", "written by custody init")
      .option("--json", "one JSON object on one line")
      .option(
        "--operator-key <file>",
        "the operator's key (default: operator/operator.key beside bootstrap.json): signs every event and " +
          "admits the controllers' keys",
      ),
  ).action(action(runBootstrap));
}

type BootstrapOptions = OutputOptions & OperatorConnectionOptions & { operatorKey?: string };

/** Reads the bootstrap, checks the operator's key, connects, commits what the log lacks, prints it. */
async function runBootstrap(file: string, o: BootstrapOptions): Promise<void> {
  const plan = readDeploymentFile(file, parseBootstrap);
  const who = bootstrapOperator(file, plan, o.operatorKey);
  // A secured deployment's operator connects as init wrote it (operator/nats.json beside
  // bootstrap.json) unless told otherwise.
  const operatorConfig = join(dirname(resolve(file)), "operator", OPERATOR_NATS_FILE);
  const conn = { ...(existsSync(operatorConfig) ? { operatorConfig } : {}), ...o };
  const nc = await connectOperator(conn, "custody-bootstrap");
  try {
    // The operator's explicit bootstrap: it creates the region's control stream if it is not there yet.
    // A replicated log's stream goes to its own cluster (through the gateways), with its replicas.
    const { log: store } = await initJetStreamControlLog(nc, {
      region: plan.controlRegion,
      ...(plan.controlStream !== undefined
        ? { replicas: plan.controlStream.replicas, placementCluster: plan.controlStream.cluster }
        : {}),
    });
    try {
      const r = await applyBootstrap(store, plan, who.signer);
      printResult(o, r, [
        ...r.controllers.map((c) => ({ committed: `admit_controller ${c}` })),
        ...r.admitted.map((h) => ({ committed: `admit_holder ${h}` })),
        ...r.obligations.map((x) => ({ committed: `create_obligation ${x}` })),
        ...r.skipped.map((x) => ({ committed: `(already there) ${x}` })),
      ]);
    } finally {
      await store.close();
    }
  } finally {
    await closeNats(nc);
  }
}

/**
 * Who commits the bootstrap. A signed deployment's bootstrap needs the operator's key: by default
 * the one init wrote beside bootstrap.json, and it must match the plan's operator public key.
 */
function bootstrapOperator(file: string, plan: BootstrapPlan, operatorKey: string | undefined) {
  const keyFile =
    operatorKey ??
    (plan.operatorPublicKey !== undefined ? join(dirname(resolve(file)), "operator", "operator.key") : undefined);
  const { who } = operatorAccess({
    operatorId: plan.operatorId,
    ...(keyFile !== undefined ? { operatorKey: keyFile } : {}),
  });
  if (
    plan.operatorPublicKey !== undefined &&
    (who.signer === undefined ||
      Buffer.from(rawPublicKey(createPublicKey(who.signer.privateKey))).toString("hex") !==
        plan.operatorPublicKey.toLowerCase())
  ) {
    throw new DeploymentError(
      `${file} belongs to a signed deployment: --operator-key must be the key of operator ` +
        `${plan.operatorId} (custody init wrote operator/operator.key)`,
      { path: "operatorKey" },
    );
  }
  return who;
}
