/**
 * Starts the demo's NATS supercluster: one `nats-server` per region, JetStream on, regions joined
 * by gateways, everything on 127.0.0.1, config and store under the run folder. Same layout as the
 * test harness (`test/helpers/nats-server.ts`), but owned by the demo's process registry so the
 * demo can SIGKILL a region and stop everything on Ctrl-C.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { CustodyError } from "../core/custody-error.ts";
import { LOOPBACK, regionConfig, type RegionPorts } from "../transport/nats-region-config.ts";
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

/** The binary to run: `NATS_SERVER_BIN` or `nats-server` on PATH. */
export function natsServerBin(): string {
  return process.env["NATS_SERVER_BIN"] ?? "nats-server";
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

/** A free loopback port chosen by the OS. */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, LOOPBACK, () => {
      const a = srv.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function monitor(httpPort: number, path: string): Promise<Record<string, unknown> | undefined> {
  try {
    const res = await fetch(`http://${LOOPBACK}:${httpPort}${path}`, { signal: AbortSignal.timeout(1000) });
    if (res.status !== 200) return undefined;
    return (await res.json()) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

async function regionReady(p: RegionPorts, others: string[]): Promise<boolean> {
  if ((await monitor(p.httpPort, "/healthz")) === undefined) return false;
  const gw = await monitor(p.httpPort, "/gatewayz");
  const out = (gw?.["outbound_gateways"] ?? {}) as Record<string, unknown>;
  const inb = (gw?.["inbound_gateways"] ?? {}) as Record<string, unknown>;
  if (!others.every((o) => o in out && o in inb)) return false;
  const jsz = await monitor(p.httpPort, "/jsz");
  const leader = (jsz?.["meta_cluster"] as { leader?: string } | undefined)?.leader;
  return typeof leader === "string" && leader.length > 0;
}

/**
 * Starts one server per region under `runDir/nats/<region>/` and resolves once every region is
 * healthy, gateways are connected both ways and JetStream has a meta leader. Throws
 * NatsLaunchError (with the log path) otherwise; the caller's registry stops what was started.
 */
export async function startRegions(registry: ProcessRegistry, runDir: string, regions: readonly string[]): Promise<Record<string, RegionEndpoint>> {
  checkNatsServer();
  const ports: RegionPorts[] = [];
  const taken = new Set<number>();
  const pick = async () => {
    for (;;) {
      const p = await freeLoopbackPort();
      if (!taken.has(p)) {
        taken.add(p);
        return p;
      }
    }
  };
  for (const name of regions) ports.push({ name, port: await pick(), httpPort: await pick(), clusterPort: await pick(), gatewayPort: await pick() });
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
      if (await regionReady(p, others)) break;
      if (Date.now() > deadline) throw new NatsLaunchError(`region ${p.name} not ready within ${READY_TIMEOUT_MS} ms`, { region: p.name });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return out;
}
