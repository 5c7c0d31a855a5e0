/**
 * Starts the demo's NATS supercluster from the configs `custody init` wrote: one `nats-server` per
 * region, JetStream on, regions joined by gateways, everything on 127.0.0.1, store under the run
 * folder. Same readiness check as the test kit (`test/kit/nats-server.ts`), but the processes are
 * owned by the demo's process registry so the demo can SIGKILL a region and stop everything on Ctrl-C.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { CustodyError } from "../../core/index.ts";
import { natsServerBin, regionReady } from "../../test/kit/index.ts";
import type { ProcessRegistry } from "./process-registry.ts";

const READY_TIMEOUT_MS = 20_000;

/** Thrown when `nats-server` is missing or a region does not come up. */
export class NatsLaunchError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super("nats_launch_failed", message, detail);
  }
}

/** One running region server. */
export interface RegionEndpoint {
  readonly region: string;
  readonly url: string;
  readonly httpPort: number;
  readonly processName: string;
}

/** The installed nats-server version line; throws NatsLaunchError saying how to install it when missing. */
export function checkNatsServer(): string {
  try {
    return execFileSync(natsServerBin(), ["--version"], { encoding: "utf8" }).trim();
  } catch {
    throw new NatsLaunchError(
      `nats-server not found (tried ${JSON.stringify(natsServerBin())}). ` +
        `Install it (Debian/Ubuntu: 'apt-get install -y nats-server') or set NATS_SERVER_BIN.`,
    );
  }
}

/**
 * Starts one server per region from the configs `custody init` wrote (`configs[region]`), logs in
 * `runDir/nats/<region>/server.log`, and resolves once every region is healthy, gateways are
 * connected both ways and JetStream has a meta leader. Throws NatsLaunchError (with the log path)
 * otherwise; the caller's registry stops what was started.
 */
export async function startRegions(
  registry: ProcessRegistry,
  runDir: string,
  configs: Readonly<Record<string, { config: string; url: string; httpPort: number }>>,
): Promise<Record<string, RegionEndpoint>> {
  checkNatsServer();
  const regions = Object.keys(configs);
  const out: Record<string, RegionEndpoint> = {};
  for (const [name, c] of Object.entries(configs)) {
    const dir = join(runDir, "nats", name);
    mkdirSync(dir, { recursive: true });
    const processName = `nats-${name}`;
    registry.spawn(processName, natsServerBin(), ["-c", c.config], { logPath: join(dir, "server.log") });
    out[name] = { region: name, url: c.url, httpPort: c.httpPort, processName };
  }
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (const name of regions) {
    const others = regions.filter((r) => r !== name);
    for (;;) {
      if (!registry.get(`nats-${name}`)!.alive())
        throw new NatsLaunchError(`nats-server for ${name} exited; see ${join(runDir, "nats", name, "server.log")}`, {
          region: name,
        });
      if (await regionReady(out[name]!.httpPort, others)) break;
      if (Date.now() > deadline)
        throw new NatsLaunchError(`region ${name} not ready within ${READY_TIMEOUT_MS} ms`, { region: name });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return out;
}
