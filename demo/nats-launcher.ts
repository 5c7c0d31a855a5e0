/**
 * Starts the demo's NATS supercluster: one `nats-server` per region, JetStream on, regions joined
 * by gateways, everything on 127.0.0.1, config and store under the run folder. Same layout, ports
 * and readiness check as the test kit (`testing/nats-server.ts`), but the processes are owned by
 * the demo's process registry so the demo can SIGKILL a region and stop everything on Ctrl-C.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CustodyError } from "../core/index.ts";
import { LOOPBACK, regionConfig, type RegionPorts } from "../transport/index.ts";
import { freePort, natsServerBin, regionReady } from "../testing/index.ts";
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
      `nats-server not found (tried ${JSON.stringify(natsServerBin())}). Install it (Debian/Ubuntu: 'apt-get install -y nats-server') or set NATS_SERVER_BIN.`,
    );
  }
}

/**
 * Starts one server per region under `runDir/nats/<region>/` and resolves once every region is
 * healthy, gateways are connected both ways and JetStream has a meta leader. Throws
 * NatsLaunchError (with the log path) otherwise; the caller's registry stops what was started.
 */
export async function startRegions(registry: ProcessRegistry, runDir: string, regions: readonly string[]): Promise<Record<string, RegionEndpoint>> {
  checkNatsServer();
  const ports: RegionPorts[] = [];
  for (const name of regions) ports.push({ name, port: await freePort(), httpPort: await freePort(), clusterPort: await freePort(), gatewayPort: await freePort() });
  const out: Record<string, RegionEndpoint> = {};
  for (const p of ports) {
    const dir = join(runDir, "nats", p.name);
    mkdirSync(join(dir, "jetstream"), { recursive: true });
    const conf = join(dir, "nats-server.conf");
    writeFileSync(conf, regionConfig(p, ports, join(dir, "jetstream")));
    const processName = `nats-${p.name}`;
    registry.spawn(processName, natsServerBin(), ["-c", conf], { logPath: join(dir, "server.log") });
    out[p.name] = { region: p.name, url: `nats://${LOOPBACK}:${p.port}`, httpPort: p.httpPort, processName };
  }
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (const p of ports) {
    const others = regions.filter((r) => r !== p.name);
    for (;;) {
      if (!registry.get(`nats-${p.name}`)!.alive()) throw new NatsLaunchError(`nats-server for ${p.name} exited; see ${join(runDir, "nats", p.name, "server.log")}`, { region: p.name });
      if (await regionReady(p.httpPort, others)) break;
      if (Date.now() > deadline) throw new NatsLaunchError(`region ${p.name} not ready within ${READY_TIMEOUT_MS} ms`, { region: p.name });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return out;
}
