/**
 * Brings a whole deployment up the way an operator would: `custody init` writes every role's
 * config, keys and NATS credentials and the regions' nats-server configs; the servers start from
 * those configs; `custody bootstrap` admits the holders and creates the obligations; then every
 * controller, holder and writer runs as `custody run <role> --config <file>`. Every process is
 * registered, so one `stopAll()` ends them.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CustodyError } from "../../core/index.ts";
import { natsRoleSchema, type NatsRoleConfig } from "../../actors/runtime/index.ts";
import { custodyCommand, freePort, repoRoot } from "../../test/kit/index.ts";
import { custodyDeploymentOf, type RegionPortSet } from "./custody-deployment.ts";
import { loadDeployment, type Deployment } from "./deployment.ts";
import { startRegions, type RegionEndpoint } from "./nats-launcher.ts";
import type { ManagedProcess, ProcessRegistry } from "./process-registry.ts";

const REPO_ROOT = repoRoot();
/** Generous bound on one role process starting (a loaded 2-core machine starts tsx slowly). */
const ROLE_READY_MS = 90_000;
/** Starts of one role before the demo gives up on it. */
const START_ATTEMPTS = 3;

/** Thrown when a `custody` command fails or a role process ends before it serves. */
export class CustodyCommandError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("custody_command_failed", message, detail);
  }
}

/** One role instance `custody init` planned, as `roles.json` lists it. */
export interface RoleInstance {
  readonly instance: string;
  readonly role: "holder" | "writer" | "controller" | "base-builder";
  readonly region: string;
  readonly config: string;
  readonly dir: string;
}

/** A running deployment. */
export interface RunningNetwork {
  readonly deployment: Deployment;
  readonly runDir: string;
  /** Where `custody init` wrote the deployment (`roles/`, `nats/`, `operator/`, `bootstrap.json`). */
  readonly initDir: string;
  readonly regions: Record<string, RegionEndpoint>;
  /** Role instances by instance name (`holder-h-eu`, `writer-w1-vol-demo`, `controller-ctl-eu-vol-demo`). */
  readonly roles: Map<string, RoleInstance>;
  /** The operator's connection (what the demo reads status, stats and units with). */
  readonly operatorNats: NatsRoleConfig;
}

/** A fresh `runs/<timestamp>` folder under `root`. */
export function makeRunDir(root = join(REPO_ROOT, "runs")): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const dir = join(root, stamp);
  mkdirSync(join(dir, "logs"), { recursive: true });
  return dir;
}

/**
 * Runs `custody <args>` as a registered child (log in `logs/<name>.log`); resolves with its stdout,
 * throws CustodyCommandError on a non-zero exit.
 */
async function custody(
  registry: ProcessRegistry,
  runDir: string,
  name: string,
  args: readonly string[],
): Promise<string> {
  const logPath = join(runDir, "logs", `${name}.log`);
  const c = custodyCommand(args);
  const p = registry.spawn(name, c.command, c.args, { logPath, cwd: REPO_ROOT });
  const code = await p.exited;
  const out = readFileSync(logPath, "utf8");
  if (code !== 0)
    throw new CustodyCommandError(`custody ${args[0]} exited ${String(code)}: ${out.slice(-2000)}`, {
      command: args[0],
      code,
    });
  return out;
}

/**
 * Resolves once `p` printed its `{"ready":true,…}` line; throws CustodyCommandError if it ends first
 * or takes longer than `ms`.
 */
async function ready(p: ManagedProcess, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const log = existsSync(p.logPath) ? readFileSync(p.logPath, "utf8") : "";
    if (log.includes('"ready":true')) return;
    if (!p.alive())
      throw new CustodyCommandError(`${p.name} ended before it served; see ${p.logPath}: ${log.slice(-1500)}`, {
        name: p.name,
      });
    if (Date.now() > until)
      throw new CustodyCommandError(`${p.name} not serving within ${ms} ms; see ${p.logPath}`, { name: p.name });
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts every role instance as its own `custody run` process, each retried like a supervisor
 * would, and resolves once all serve.
 */
async function startRoles(
  registry: ProcessRegistry,
  runDir: string,
  roles: readonly RoleInstance[],
  say: (step: string) => void,
): Promise<void> {
  const start = (r: RoleInstance) => {
    const c = custodyCommand(["run", r.role, "--config", r.config]);
    return registry.spawn(r.instance, c.command, c.args, {
      logPath: join(runDir, "logs", `${r.instance}.log`),
      cwd: REPO_ROOT,
    });
  };
  // As a supervisor would (systemd's Restart=on-failure): a role whose start failed (on a loaded
  // machine a connect or JetStream request can time out) is started again, a new incarnation.
  const serve = async (r: RoleInstance) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await ready(start(r), ROLE_READY_MS);
      } catch (err) {
        if (attempt >= START_ATTEMPTS) throw err;
      }
    }
  };
  const startAll = async (role: RoleInstance["role"]) =>
    void (await Promise.all(roles.filter((r) => r.role === role).map(serve)));
  // Controllers and holders together: a holder's process claims a new incarnation and keeps asking
  // to be admitted until a controller admits it (the key the bootstrap admitted signs it: key
  // continuity). Writers once they serve: a writer's workload writes from the moment it serves.
  const count = (role: RoleInstance["role"]) => roles.filter((r) => r.role === role).length;
  say(
    `custody run: starting ${count("controller")} controllers and ${count("holder")} holders, ` +
      `each its own process (slow on a loaded machine)…`,
  );
  await Promise.all([startAll("controller"), startAll("holder")]);
  say(`custody run: starting ${count("writer")} writers; each writes from the moment it serves…`);
  await startAll("writer");
}

/**
 * Starts the deployment at `deploymentPath` into `runDir` (`secured`: as `custody init` writes it
 * by default, TLS and an nkey user per role). Throws DeploymentError, NatsLaunchError or
 * CustodyCommandError; whatever was started before the failure stays in `registry` for the caller to stop.
 */
export async function launchNetwork(
  registry: ProcessRegistry,
  deploymentPath: string,
  runDir: string,
  secured = true,
  say: (step: string) => void = () => undefined,
): Promise<RunningNetwork> {
  const d = loadDeployment(deploymentPath);
  copyFileSync(deploymentPath, join(runDir, "deployment.json"));
  const ports: Record<string, RegionPortSet> = {};
  for (const r of d.regions)
    ports[r.name] = {
      port: await freePort(),
      httpPort: await freePort(),
      clusterPort: await freePort(),
      gatewayPort: await freePort(),
    };
  const custodyFile = join(runDir, "custody-deployment.json");
  writeFileSync(custodyFile, JSON.stringify(custodyDeploymentOf(d, runDir, ports, secured), null, 2));
  const initDir = join(runDir, "deployment");
  say(
    `custody init: every role's config, keys${secured ? ", TLS certificates" : ""} and NATS users, ` +
      `and ${d.regions.length} nats-server configs…`,
  );
  await custody(registry, runDir, "custody-init", ["init", custodyFile, "--out", initDir]);
  const index = JSON.parse(readFileSync(join(initDir, "roles.json"), "utf8")) as {
    roles: RoleInstance[];
    natsServers: { region: string; config: string; url: string }[];
  };
  say(`starting ${index.natsServers.length} nats-servers (${index.natsServers.map((x) => x.region).join(", ")})…`);
  const regions = await startRegions(
    registry,
    runDir,
    Object.fromEntries(
      index.natsServers.map((s) => [s.region, { config: s.config, url: s.url, httpPort: ports[s.region]!.httpPort }]),
    ),
  );
  const operatorFile = join(initDir, "operator", "nats.json");
  const operatorNats: NatsRoleConfig = existsSync(operatorFile)
    ? natsRoleSchema.parse(JSON.parse(readFileSync(operatorFile, "utf8")))
    : { servers: regions[d.controller.region]!.url };
  // The operator's bootstrap (on the controller's region: the control stream lives there): controllers'
  // keys, first incarnations, obligations.
  say(`custody bootstrap: admitting the controllers' keys and the holders, creating each volume's obligation…`);
  await custody(registry, runDir, "custody-bootstrap", [
    "bootstrap",
    join(initDir, "bootstrap.json"),
    "--server",
    regions[d.controller.region]!.url,
    "--json",
  ]);

  await startRoles(registry, runDir, index.roles, say);
  const roles = new Map(index.roles.map((r) => [r.instance, r]));
  return { deployment: d, runDir, initDir, regions, roles, operatorNats };
}

/** The region each registered process of `net` runs in (role instances and nats-servers). */
export function regionOfProcess(net: RunningNetwork): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of net.roles.values()) out.set(r.instance, r.region);
  for (const r of Object.values(net.regions)) out.set(r.processName, r.region);
  return out;
}

/**
 * The strike: SIGKILL every role process of `regions` and their nats-servers in one synchronous
 * sweep (no event-loop turn between the signals, so nothing more leaves any of them), then wait
 * until all are gone. Returns the role instances killed.
 */
export async function strikeRegions(
  registry: ProcessRegistry,
  net: RunningNetwork,
  regions: readonly string[],
): Promise<string[]> {
  const struck = new Set(regions);
  const victims = [...regionOfProcess(net)].filter(([, r]) => struck.has(r)).map(([name]) => name);
  await Promise.all(victims.map((n) => registry.kill(n)));
  return victims.filter((n) => net.roles.has(n));
}
