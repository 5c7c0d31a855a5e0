import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DeployedProcess } from "./deployed-process.ts";
import { loopbackDeployment, type LoopbackDeploymentOptions } from "./loopback-deployment.ts";
import { natsServerBin } from "./nats-server.ts";
import { waitForRegions, type ControlServerEntry } from "./regions-ready.ts";

/** Generous bound on a deployment's start: it only ends a hung start, it measures nothing. */
export const DEPLOYMENT_READY_MS = 90_000;

/** Runs one `custody` command line as the operator and resolves with its stdout (rejects on a non-zero exit). */
export type OperatorCustody = (args: readonly string[]) => Promise<string>;

/** One instance in `roles.json`. */
export interface RoleEntry {
  instance: string;
  role: string;
  region: string;
  config: string;
}

/** `roles.json` as `custody init` writes it. */
export interface DeploymentIndex {
  roles: RoleEntry[];
  natsServers: { region: string; config: string; url: string }[];
  /** A replicated control log's servers (absent or empty: a single-replica log). */
  controlServers?: ControlServerEntry[];
}

/** A written deployment whose nats-servers are up. */
export interface StartedNats {
  /** The folder the deployment file and `out` are in. */
  readonly dir: string;
  /** The output of `custody init`. */
  readonly out: string;
  readonly index: DeploymentIndex;
  /** Every region's server, then the control log's servers (`nats-<region>`, then `nats-<serverName>`). */
  readonly servers: DeployedProcess[];
}

/**
 * `custody init` (through `custody`) on a fresh loopback deployment in a folder `makeDir()` gives, then one nats-server
 * per region from the configs it wrote (and, with a replicated control log, its three servers), until every region is
 * healthy, its gateways are up both
 * ways and a JetStream meta leader is known. `track` sees every server as it starts (to stop it
 * later). Free ports are picked before the servers bind them; when another process took one
 * meanwhile ("address already in use"), it starts over with new ports (3 attempts).
 */
export async function initAndStartNats(
  custody: OperatorCustody,
  makeDir: () => string,
  o: LoopbackDeploymentOptions,
  track: (p: DeployedProcess) => void = () => undefined,
): Promise<StartedNats> {
  return await initAndStartNatsOf(custody, makeDir, (dir) => loopbackDeployment(dir, o), track);
}

/**
 * {@link initAndStartNats} for any loopback deployment file: `build(dir)` writes it with fresh free
 * ports (it is called again, for new ports, when one was taken meanwhile).
 */
export async function initAndStartNatsOf(
  custody: OperatorCustody,
  makeDir: () => string,
  build: (dir: string) => Promise<Record<string, unknown>>,
  track: (p: DeployedProcess) => void = () => undefined,
): Promise<StartedNats> {
  for (let attempt = 1; ; attempt++) {
    const dir = makeDir();
    const deployment = await build(dir);
    writeFileSync(join(dir, "deployment.json"), JSON.stringify(deployment));
    const out = join(dir, "out");
    await custody(["init", join(dir, "deployment.json"), "--out", out]);
    const index = JSON.parse(readFileSync(join(out, "roles.json"), "utf8")) as DeploymentIndex;
    const regions = deployment["regions"] as Record<string, { httpPort: number }>;
    const control = index.controlServers ?? [];
    const servers = [
      ...index.natsServers.map((s) => new DeployedProcess(`nats-${s.region}`, natsServerBin(), ["-c", s.config])),
      ...control.map((c) => new DeployedProcess(`nats-${c.serverName}`, natsServerBin(), ["-c", c.config])),
    ];
    servers.forEach(track);
    const logs = () => servers.map((p) => p.log).join("\n");
    try {
      await waitForRegions(index.natsServers, regions, servers, logs, DEPLOYMENT_READY_MS, control);
      return { dir, out, index, servers };
    } catch (err) {
      for (const p of servers) await p.signal("SIGKILL", 10_000);
      if (attempt >= 3 || !/address already in use/i.test(logs())) throw err;
    }
  }
}
