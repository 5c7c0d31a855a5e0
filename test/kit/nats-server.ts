/**
 * Test harness: real `nats-server` child processes on loopback.
 *
 * - `startNatsServer()` runs one server with JetStream in a fresh temp dir.
 * - `startSupercluster()` runs one single-server cluster per region, joined by gateways.
 *
 * Every child this module spawns is tracked in `liveChildren` and killed (`reapOnExit`) when the
 * test process exits (normally or by SIGINT/SIGTERM), so a failing test never leaves a server behind. Nothing
 * here ever signals a process it did not spawn.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  controlClusterServerConfig,
  LOOPBACK,
  regionConfig,
  type ControlClusterPorts,
  type RegionPorts,
  type RegionSecurityBlocks,
} from "../../transport/index.ts";
import { processRunning } from "../../core/index.ts";
import { reapOnExit } from "./child-reaper.ts";
import { freePort } from "./free-port.ts";
export { freePort } from "./free-port.ts";

/** The binary to run: `NATS_SERVER_BIN` or `nats-server` on PATH. */
export function natsServerBin(): string {
  return process.env["NATS_SERVER_BIN"] ?? "nats-server";
}
const READY_TIMEOUT_MS = 20_000;
const STOP_GRACE_MS = 5_000;
const LOG_TAIL_CHARS = 4_000;

/** Every nats-server child started by this module and not yet exited. */
const liveChildren = new Set<ChildProcess>();

/** PIDs of the nats-server children this process started that are still running. */
export function liveNatsServerPids(): number[] {
  return [...liveChildren].flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
}

/** True when a process with this PID exists. */
export const isProcessAlive = processRunning;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Fetches a monitoring endpoint; undefined when the server does not answer (yet). */
async function fetchMonitor(httpPort: number, path: string): Promise<{ status: number; body: unknown } | undefined> {
  try {
    const res = await fetch(`http://${LOOPBACK}:${httpPort}${path}`, { signal: AbortSignal.timeout(1_000) });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON; keep the text
    }
    return { status: res.status, body };
  } catch {
    return undefined;
  }
}

/** One spawned nats-server process with its captured log tail. */
interface RunningProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  log(): string;
}

function spawnServer(configPath: string): RunningProcess {
  const child = spawn(natsServerBin(), ["-c", configPath], { stdio: ["ignore", "pipe", "pipe"] });
  reapOnExit(child);
  liveChildren.add(child);
  let tail = "";
  const capture = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-LOG_TAIL_CHARS);
  };
  child.stdout?.on("data", capture);
  child.stderr?.on("data", capture);
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => {
      liveChildren.delete(child);
      resolve(code);
    });
    child.once("error", (err) => {
      liveChildren.delete(child);
      tail += `\nspawn error: ${err.message}`;
      resolve(-1);
    });
  });
  return { child, exited, log: () => tail };
}

/** Sends `signal`, escalating to SIGKILL after a grace period; resolves once the process exited. */
async function stopProcess(proc: RunningProcess, signal: "SIGTERM" | "SIGKILL"): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill(signal);
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), STOP_GRACE_MS);
  await proc.exited;
  clearTimeout(timer);
}

/** Polls until `check` says ready; throws with the server's log tail if it exits or times out. */
async function waitReady(proc: RunningProcess, what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exited = false;
  void proc.exited.then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${what} exited before it was ready:\n${proc.log()}`);
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`${what} was not ready within ${READY_TIMEOUT_MS} ms:\n${proc.log()}`);
}

/** `/healthz` is 200 only once the server accepts clients and (with JetStream) JetStream is up. */
async function healthy(httpPort: number): Promise<boolean> {
  const res = await fetchMonitor(httpPort, "/healthz");
  return res?.status === 200;
}

function isPortClash(log: string): boolean {
  return log.search(/address already in use/i) >= 0;
}

/** Options of `startNatsServer`. */
export interface NatsServerOptions {
  /** Enable JetStream (default true). */
  jetstream?: boolean;
  /** `server_name` (default a unique `test-<pid>-<n>`). */
  serverName?: string;
  /** Extra raw config lines appended to the generated config. */
  extraConfig?: string;
  /**
   * Security config text (transport/security/server-config.ts: `renderServerAuth` and a client
   * `renderTlsBlock`), appended like `extraConfig`. Readiness is still probed on the monitoring port.
   */
  security?: string;
}

/** A running test server. `url` is `nats://127.0.0.1:<port>`. */
export interface NatsServerHandle {
  readonly url: string;
  readonly port: number;
  readonly httpPort: number;
  readonly storeDir: string;
  /** PID of the current process (changes after `restart`). */
  readonly pid: number;
  /** Kills the server (SIGTERM, SIGKILL if it lingers) and deletes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /**
   * Stops the process (SIGTERM, or SIGKILL when `kill`) and starts it again on the same port and
   * the same store dir, resolving once it is healthy again.
   */
  restart(opts?: { kill?: boolean }): Promise<void>;
}

let serverCounter = 0;

/**
 * Starts a real `nats-server` on a free loopback port with JetStream in a fresh temp dir and
 * resolves once `/healthz` says it is ready. Throws (with the server log) if it cannot start.
 */
export async function startNatsServer(opts: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const jetstream = opts.jetstream ?? true;
  const serverName = opts.serverName ?? `test-${process.pid}-${++serverCounter}`;
  const dir = mkdtempSync(join(tmpdir(), "custody-nats-"));
  const storeDir = join(dir, "jetstream");
  mkdirSync(storeDir, { recursive: true });
  const configPath = join(dir, "nats-server.conf");

  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const httpPort = await freePort();
    writeFileSync(
      configPath,
      [
        `server_name: "${serverName}"`,
        `listen: "${LOOPBACK}:${port}"`,
        `http: "${LOOPBACK}:${httpPort}"`,
        jetstream ? `jetstream { store_dir: ${JSON.stringify(storeDir)} }` : "",
        opts.extraConfig ?? "",
        opts.security ?? "",
      ].join("\n"),
    );
    let proc = spawnServer(configPath);
    try {
      await waitReady(proc, `nats-server ${serverName}`, () => healthy(httpPort));
    } catch (err) {
      await stopProcess(proc, "SIGKILL");
      if (isPortClash(proc.log())) continue; // another process took the port between pick and bind
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }

    let stopped = false;
    const handle: NatsServerHandle = {
      url: `nats://${LOOPBACK}:${port}`,
      port,
      httpPort,
      storeDir,
      get pid() {
        return proc.child.pid ?? -1;
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        await stopProcess(proc, "SIGTERM");
        rmSync(dir, { recursive: true, force: true });
      },
      async restart(r = {}) {
        if (stopped) throw new Error("restart after stop");
        await stopProcess(proc, r.kill ? "SIGKILL" : "SIGTERM");
        proc = spawnServer(configPath);
        await waitReady(proc, `nats-server ${serverName} (restart)`, () => healthy(httpPort));
      },
    };
    return handle;
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error("nats-server: could not bind free ports after 5 attempts");
}

/** One region of a supercluster: a one-server cluster. */
export interface RegionServer {
  readonly name: string;
  readonly serverName: string;
  readonly url: string;
  readonly port: number;
  readonly httpPort: number;
  readonly clusterPort: number;
  readonly gatewayPort: number;
  readonly storeDir: string;
  /** PID of the current process (changes after `restart`). */
  readonly pid: number;
  /**
   * Stops the server (SIGTERM, or SIGKILL when `kill`) and starts it again, `downMs` later (default at once), with the
   * same config and store.
   */
  restart(opts?: { kill?: boolean; downMs?: number }): Promise<void>;
  /** Freezes the server (SIGSTOP) for `ms`, then resumes it (SIGCONT): a partition of that region. */
  pause(ms: number): Promise<void>;
}

/** A running supercluster; `regions[name].url` is where a client of that region connects. */
export interface SuperclusterHandle {
  readonly regions: Readonly<Record<string, RegionServer>>;
  /**
   * With `controlCluster`: its member in each of its regions, by region (`serverName` `<cluster>-<region>`); else
   * empty.
   */
  readonly control: Readonly<Record<string, RegionServer>>;
  /** PIDs of every server of the supercluster now (for leak checks). */
  readonly pids: readonly number[];
  /** Stops every server and deletes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

/** Options of `startSupercluster`. */
export interface SuperclusterOptions {
  /** Region names; each becomes a one-server cluster and a gateway name. */
  regions: readonly string[];
  /** Enable JetStream in every region (default true). */
  jetstream?: boolean;
  /** Security config text per region (auth, client/cluster/gateway TLS); see `RegionSecurityBlocks`. */
  security?: (region: string) => RegionSecurityBlocks;
  /**
   * A replicated control log's own JetStream cluster, as `custody init` lays it out with 3 regions
   * (policies/deploy/control-servers.ts): one more server in each of `regions`, routed to each other and
   * joined to every region by gateways. Use it with `jetstream: false`, so its members are the
   * whole JetStream meta group.
   */
  controlCluster?: { readonly name: string; readonly regions: readonly string[] };
}

interface GatewayzBody {
  outbound_gateways?: Record<string, unknown>;
  inbound_gateways?: Record<string, unknown>;
}

/** Ready when this region has outbound AND inbound gateway connections to every other region. */
async function gatewaysConnected(httpPort: number, others: readonly string[]): Promise<boolean> {
  const res = await fetchMonitor(httpPort, "/gatewayz");
  if (res?.status !== 200 || typeof res.body !== "object" || res.body === null) return false;
  const body = res.body as GatewayzBody;
  const out = body.outbound_gateways ?? {};
  const inb = body.inbound_gateways ?? {};
  return others.every((o) => o in out && o in inb);
}

/** True when this server has outbound gateway connections to every cluster in `others`. */
async function outboundGateways(httpPort: number, others: readonly string[]): Promise<boolean> {
  const res = await fetchMonitor(httpPort, "/gatewayz");
  if (res?.status !== 200 || typeof res.body !== "object" || res.body === null) return false;
  const out = (res.body as GatewayzBody).outbound_gateways ?? {};
  return others.every((o) => o in out);
}

/** Ready when this server's JetStream meta group has an elected leader (streams can be created). */
async function metaLeaderKnown(httpPort: number): Promise<boolean> {
  const res = await fetchMonitor(httpPort, "/jsz");
  if (res?.status !== 200 || typeof res.body !== "object" || res.body === null) return false;
  const meta = (res.body as { meta_cluster?: { leader?: string } }).meta_cluster;
  return typeof meta?.leader === "string" && meta.leader.length > 0;
}

/**
 * True once the region server monitored on `httpPort` is healthy, has gateway connections both
 * ways to every region in `others` and, with JetStream, a meta leader (streams can be created).
 */
export async function regionReady(httpPort: number, others: readonly string[], jetstream = true): Promise<boolean> {
  return (
    (await healthy(httpPort)) &&
    (await gatewaysConnected(httpPort, others)) &&
    (!jetstream || (await metaLeaderKnown(httpPort)))
  );
}

/** Region names must be distinct and usable as server and gateway names. */
function checkRegionNames(names: readonly string[]): void {
  if (names.length === 0 || new Set(names).size !== names.length) {
    throw new Error(`supercluster needs distinct region names, got ${JSON.stringify(names)}`);
  }
  for (const n of names) {
    if (n.search(/^[A-Za-z0-9_-]+$/) < 0) throw new Error(`bad region name ${JSON.stringify(n)}`);
  }
}

/** Free loopback ports for each region's server. */
async function regionPorts(names: readonly string[]): Promise<RegionPorts[]> {
  const ports: RegionPorts[] = [];
  for (const name of names) {
    ports.push({
      name,
      port: await freePort(),
      httpPort: await freePort(),
      clusterPort: await freePort(),
      gatewayPort: await freePort(),
    });
  }
  return ports;
}

/** Free loopback ports for the control log's cluster, one server per region it names. */
async function controlClusterPorts(opts: SuperclusterOptions): Promise<ControlClusterPorts | undefined> {
  const cluster = opts.controlCluster;
  return cluster === undefined
    ? undefined
    : {
        name: cluster.name,
        servers: await Promise.all(
          cluster.regions.map(async (region) => ({
            name: region,
            serverName: `${cluster.name}-${region}`,
            port: await freePort(),
            httpPort: await freePort(),
            clusterPort: await freePort(),
            gatewayPort: await freePort(),
          })),
        ),
      };
}

type ServerHandleArgs = [
  r: RegionPorts,
  serverName: string,
  storeDir: string,
  configPath: string,
  index: number,
  ready: () => Promise<boolean>,
];

/** The handle of the server spawned at `procs[index]` from `configPath`; `ready` is what a restart waits for. */
function serverHandleOf(
  procs: RunningProcess[],
  r: RegionPorts,
  serverName: string,
  storeDir: string,
  configPath: string,
  index: number,
  ready: () => Promise<boolean>,
): RegionServer {
  return {
    name: r.name,
    serverName,
    url: `nats://${LOOPBACK}:${r.port}`,
    port: r.port,
    httpPort: r.httpPort,
    clusterPort: r.clusterPort,
    gatewayPort: r.gatewayPort,
    storeDir,
    get pid() {
      return procs[index]!.child.pid ?? -1;
    },
    async restart(o = {}) {
      await stopProcess(procs[index]!, o.kill ? "SIGKILL" : "SIGTERM");
      if (o.downMs !== undefined) await sleep(o.downMs);
      procs[index] = spawnServer(configPath);
      await waitReady(procs[index]!, `${serverName} (restart)`, ready);
    },
    async pause(ms) {
      const child = procs[index]!.child;
      child.kill("SIGSTOP");
      await sleep(ms);
      child.kill("SIGCONT");
    },
  };
}

/** Spawns the control cluster's servers (after the regions' in `procs`), each handle into `control`. */
function spawnControlServers(
  dir: string,
  controlPorts: ControlClusterPorts | undefined,
  ports: readonly RegionPorts[],
  procs: RunningProcess[],
  control: Record<string, RegionServer>,
  serverHandle: (...a: ServerHandleArgs) => RegionServer,
): void {
  const names = ports.map((r) => r.name);
  for (const c of controlPorts?.servers ?? []) {
    const serverDir = join(dir, c.serverName);
    const storeDir = join(serverDir, "jetstream");
    mkdirSync(storeDir, { recursive: true });
    const configPath = join(serverDir, "nats-server.conf");
    writeFileSync(configPath, controlClusterServerConfig(c, controlPorts!, ports, storeDir));
    procs.push(spawnServer(configPath));
    // A restarted member is ready once healthy (JetStream caught up) with its gateways out to every region.
    control[c.name] = serverHandle(
      c,
      c.serverName,
      storeDir,
      configPath,
      procs.length - 1,
      async () => (await healthy(c.httpPort)) && (await outboundGateways(c.httpPort, names)),
    );
  }
}

/** Waits until every region and control server is ready: healthy, gateways connected, a meta leader where needed. */
async function superclusterReady(
  ports: readonly RegionPorts[],
  controlPorts: ControlClusterPorts | undefined,
  procs: readonly RunningProcess[],
  jetstream: boolean,
): Promise<void> {
  const names = ports.map((r) => r.name);
  await Promise.all(
    ports.map((r, i) => {
      const proc = procs[i]!;
      const others = names.filter((n) => n !== r.name);
      return waitReady(proc, `region ${r.name}`, () =>
        regionReady(r.httpPort, controlPorts === undefined ? others : [...others, controlPorts.name], jetstream),
      );
    }),
  );
  await Promise.all(
    (controlPorts?.servers ?? []).map((c, i) =>
      waitReady(
        procs[ports.length + i]!,
        c.serverName,
        async () =>
          (await healthy(c.httpPort)) &&
          (await outboundGateways(c.httpPort, names)) &&
          (await metaLeaderKnown(c.httpPort)),
      ),
    ),
  );
}

/**
 * Starts one single-server cluster per region (JetStream on), all joined by gateways on loopback.
 * Resolves only when every region is healthy and every gateway (both directions) is connected.
 * On failure, stops whatever it started and throws with the server logs.
 */
export async function startSupercluster(opts: SuperclusterOptions): Promise<SuperclusterHandle> {
  const names = [...opts.regions];
  checkRegionNames(names);
  const jetstream = opts.jetstream ?? true;

  for (let attempt = 0; attempt < 3; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), "custody-supercluster-"));
    const ports = await regionPorts(names);
    const controlPorts = await controlClusterPorts(opts);
    const procs: RunningProcess[] = [];
    const regions: Record<string, RegionServer> = {};
    const control: Record<string, RegionServer> = {};
    const serverHandle = (...a: ServerHandleArgs) => serverHandleOf(procs, ...a);
    const stopAll = async () => {
      await Promise.all(procs.map((p) => stopProcess(p, "SIGTERM")));
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      for (const r of ports) {
        const regionDir = join(dir, r.name);
        const storeDir = join(regionDir, "jetstream");
        mkdirSync(storeDir, { recursive: true });
        const configPath = join(regionDir, "nats-server.conf");
        writeFileSync(
          configPath,
          regionConfig(r, ports, jetstream ? storeDir : undefined, opts.security?.(r.name), controlPorts),
        );
        const proc = spawnServer(configPath);
        procs.push(proc);
        const others = names.filter((n) => n !== r.name);
        regions[r.name] = serverHandle(
          r,
          `${r.name}-0`,
          storeDir,
          configPath,
          procs.length - 1,
          async () => (await healthy(r.httpPort)) && (await gatewaysConnected(r.httpPort, others)),
        );
      }
      spawnControlServers(dir, controlPorts, ports, procs, control, serverHandle);
      await superclusterReady(ports, controlPorts, procs, jetstream);
    } catch (err) {
      const clash = procs.some((p) => isPortClash(p.log()));
      await stopAll();
      if (clash) continue;
      throw err;
    }
    let stopped = false;
    return {
      regions,
      control,
      get pids() {
        return [...Object.values(regions), ...Object.values(control)].map((r) => r.pid);
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        await stopAll();
      },
    };
  }
  throw new Error("supercluster: could not bind free ports after 3 attempts");
}
