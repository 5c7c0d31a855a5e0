import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { fetchUnits } from "../../actors/index.ts";
import { recoverVolume } from "../../actors/index.ts";
import type { ControllerConfig } from "../../actors/index.ts";
import { statusSubject } from "../../transport/protocol/index.ts";
import { decodeMessage } from "../../transport/protocol/index.ts";
import { volumeStatusSpec, type VolumeStatus } from "../../transport/protocol/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { LossKind, type Site } from "../../policies/index.ts";
import { initJetStreamControlLog } from "../../transport/index.ts";
import { NatsTransport, type JetStreamControlLog } from "../../transport/index.ts";
import { workloadBlock, type AckedWrite } from "../../actors/runtime/index.ts";
import {
  bootstrapControlLog,
  harnessControllerConfig,
  harnessSite,
  pidAlive,
  RoleProcess,
  startSupercluster,
  type SuperclusterHandle,
  writeHolderRole,
  writeWriterRole,
} from "../../test/kit/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";
import { SmartWalVolume } from "../../volume/index.ts";
import { chaosPlan, ChaosFaultKind, type ChaosFault } from "./fault-plan.ts";
import { controlClusterName } from "../../policies/deploy/index.ts";
import { watchControlPlane, type ControlPlaneWatch } from "./control-plane-watch.ts";

/** What one chaos run measured (the JSON the CLI prints on its last line). */
export interface ChaosResult {
  readonly seed: number;
  readonly faults: readonly ChaosFault[];
  readonly acknowledged: number;
  readonly protected_through_after_heal: number;
  /** Acknowledged ranges never protected again by the end of the heal. */
  readonly stranded_ranges: readonly [number, number][];
  /** Longest time from the end of a fault until every required scenario covered what was acknowledged then. */
  readonly max_heal_s: number;
  readonly heal_s: readonly (number | null)[];
  readonly lost_acknowledged: number;
  readonly leftover_processes: number;
  /** Control stream leader changes plus volume lease holder changes seen (tools/chaos/control-plane-tally.ts). */
  readonly control_failovers: number;
  readonly control_leader_changes: number;
  readonly control_lease_changes: number;
  /** Longest stretch without a successful control stream probe (s). */
  readonly max_control_unavailable_s: number;
  readonly seconds: number;
}

const VOLUME = "vol-chaos";
const LANE = "l0";
const BLOCKS = 256;
const REGION = "ctl";
/**
 * The longest the control log may be unavailable: what its appenders wait for a new leader
 * (transport/jetstream-control-log.ts).
 */
export const CONTROL_UNAVAILABLE_BOUND_S = 30;
const HEAL_TIMEOUT_MS = 45_000;
/** Every region hosts a control log server; roles live in east and west only. */
const REGIONS = ["east", "west", "vault"];
const ROLE_REGIONS = ["east", "west"];
/** The volume's two controllers (active and standby, decided by the lease) and their regions. */
const CONTROLLERS: Record<string, string> = { "ctl-east": "east", "ctl-west": "west" };
/** Lease timings as `custody init` writes them for loopback tests: a takeover within about 3.3 s. */
const LEASE = { renewMs: 500, timeoutMs: 3_000, checkMs: 250 };

const site = harnessSite;
const SITES: Record<string, Site> = {
  "s-w": site("s-w", "east", "east-az1"),
  "s-e1": site("s-e1", "east", "east-az1"),
  "s-e2": site("s-e2", "east", "east-az2"),
  "s-w1": site("s-w1", "west", "west-az1"),
  "s-w2": site("s-w2", "west", "west-az2"),
  "s-v": site("s-v", "vault", "vault-az1"),
};
/** holder → [site, region it connects to, upstream, downstream, disk]. */
const HOLDERS: Record<string, [string, string, string[], string[], boolean]> = {
  "h-e1": ["s-e1", "east", ["w1"], ["h-w1"], false],
  "h-e2": ["s-e2", "east", ["w1"], ["h-w2"], true],
  "h-w1": ["s-w1", "west", ["h-e1"], [], false],
  "h-w2": ["s-w2", "west", ["h-e2"], [], true],
};

function controllerConfig(controllerId: string): ControllerConfig {
  const holderSites = Object.fromEntries(Object.entries(HOLDERS).map(([h, [s]]) => [h, s]));
  return harnessControllerConfig({
    controllerId,
    controlRegion: REGION,
    evalIntervalMs: 250,
    volume: VOLUME,
    lane: LANE,
    sites: SITES,
    holderSites,
    powerLossRegions: ["east"],
    releasable: ["h-e1", "h-w1"],
    durable: Object.keys(HOLDERS).filter((h) => HOLDERS[h]![4]),
  });
}

/** The acknowledgement log so far. */
function ackedWrites(file: string): AckedWrite[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as AckedWrite);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The highest sequence acknowledged so far. */
function ackedHead(ackLog: string): number {
  return ackedWrites(ackLog).reduce((m, a) => Math.max(m, a.seq), 0);
}

/**
 * What one run started, filled in as it starts it, so that the last step can stop everything even when
 * the run failed half-way; and the clock its log lines count from.
 */
interface ChaosWorld {
  readonly dir: string;
  readonly cwd: string;
  readonly procs: RoleProcess[];
  /** Every server process ever started (a restart starts a new one), to count what outlived the run. */
  readonly serverPids: number[];
  sc?: SuperclusterHandle;
  observer?: NatsTransport;
  watch?: ControlPlaneWatch;
  /** Times in the log count from the first fault's window (t0); before it, from the watch's start. */
  t0: number;
}

/** The started deployment the fault loop and the checks work on. */
interface Deployment {
  readonly sc: SuperclusterHandle;
  readonly observer: NatsTransport;
  readonly watch: ControlPlaneWatch;
  readonly holderProcs: ReadonlyMap<string, RoleProcess>;
  readonly ctlProcs: ReadonlyMap<string, RoleProcess>;
  readonly writer: RoleProcess;
  readonly ackLog: string;
  readonly dataKey: Buffer;
}

/** The cut every required scenario keeps on fresh evidence, as the controller's status last said. */
interface Protection {
  protectedThrough: number;
}

type Log = (line: string) => void;

/** How a role process in `region` connects: to that region's server, reconnecting for ever. */
function natsOf(sc: SuperclusterHandle, region: string) {
  return { servers: sc.regions[region]!.url, maxReconnectAttempts: -1, reconnectTimeWaitMs: 250 };
}

/**
 * Runs one chaos world on real processes: a two-region supercluster (JetStream on), four holders
 * (RAM and disk, in both regions) and a controller as `custody run` processes, a writer process with
 * a continuous workload; injects the seed's faults, lets the network heal by itself, then checks that
 * nothing acknowledged is stranded (unprotected) or lost (missing from a recovery). Stops everything
 * it started and counts what is left.
 */
export async function runChaos(
  seed: number,
  o: { durationS?: number; log?: (line: string) => void } = {},
): Promise<ChaosResult> {
  const started = Date.now();
  const log = o.log ?? (() => undefined);
  const durationMs = (o.durationS ?? 40) * 1000;
  const faults = chaosPlan(seed, {
    durationMs,
    regions: ROLE_REGIONS,
    holders: Object.keys(HOLDERS),
    leaseTimeoutMs: LEASE.timeoutMs,
  });
  const w: ChaosWorld = {
    dir: mkdtempSync(join(tmpdir(), `custody-chaos-${seed}-`)),
    cwd: process.cwd(),
    procs: [],
    serverPids: [],
    t0: 0,
  };
  try {
    const d = await startWorld(w, log);
    log(
      `seed ${seed}: deployment up in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        `${faults.length} faults over ${durationMs / 1000} s`,
    );
    const protection = followProtection(d.observer);
    const healS = await injectFaults(w, d, protection, faults, durationMs, log);
    const { acked, finalHead, stranded } = await healAfterWorkload(d, protection);
    const lost = await countLost(w, d, acked, finalHead, log);
    const heal = healS.map((x) => (x === null ? null : Math.round(x * 10) / 10));
    const maxHeal = heal.reduce<number>((m, x) => Math.max(m, x ?? HEAL_TIMEOUT_MS / 1000), 0);
    // The cut as it stands now: status messages may still arrive while everything stops.
    const protectedThrough = protection.protectedThrough;
    const control = await d.watch.stop();
    w.watch = undefined;
    const leftover = await stopEverything(w, d);
    return {
      seed,
      faults,
      acknowledged: acked.length,
      protected_through_after_heal: protectedThrough,
      stranded_ranges: stranded,
      max_heal_s: maxHeal,
      heal_s: heal,
      lost_acknowledged: lost,
      leftover_processes: leftover,
      control_failovers: control.failovers,
      control_leader_changes: control.leaderChanges,
      control_lease_changes: control.holderChanges,
      max_control_unavailable_s: Math.round(control.maxUnavailableMs / 100) / 10,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    await cleanUp(w);
  }
}

/**
 * Starts the world in the order the real deployment comes up: the supercluster and the control log,
 * the holders (then the operator's bootstrap admits them), the controllers, the control plane watch,
 * and last the writer with its workload.
 */
async function startWorld(w: ChaosWorld, log: Log): Promise<Deployment> {
  // The control log as `custody init` lays it out with 3 regions: a JetStream cluster of its own, one
  // server per region, 3 replicas.
  const cluster = controlClusterName(REGION);
  const sc = await startSupercluster({
    regions: REGIONS,
    jetstream: false,
    controlCluster: { name: cluster, regions: REGIONS },
  });
  w.sc = sc;
  // The control log's stream is created on the control cluster, before any other process opens it.
  const observer = await NatsTransport.connect({
    servers: sc.regions["east"]!.url,
    name: "chaos-observer",
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  w.observer = observer;
  const { log: store } = await initJetStreamControlLog(observer.connection, {
    region: REGION,
    replicas: 3,
    placementCluster: cluster,
  });
  const holderProcs = await startHolders(w, sc, store);
  const ctlProcs = await startControllers(w, sc);
  w.t0 = Date.now();
  const watch = await watchControlPlane(
    Object.values(sc.control).map((c) => c.url),
    REGION,
    store,
    VOLUME,
    (line) => log(`  ${((Date.now() - w.t0) / 1000).toFixed(1)} s (watch) ${line}`),
  );
  w.watch = watch;
  const { writer, ackLog, dataKey } = await startWriter(w, sc);
  return { sc, observer, watch, holderProcs, ctlProcs, writer, ackLog, dataKey };
}

/** The four holders, started together; then the operator's bootstrap admits their first incarnations. */
async function startHolders(
  w: ChaosWorld,
  sc: SuperclusterHandle,
  store: JetStreamControlLog,
): Promise<Map<string, RoleProcess>> {
  const holderProcs = new Map<string, RoleProcess>();
  const admitted: { id: string; site: Site; publicKey: Uint8Array }[] = [];
  for (const [id, [s, region, upstream, downstream, disk]] of Object.entries(HOLDERS)) {
    const { file, publicKey } = writeHolderRole(
      w.dir,
      { id, site: SITES[s]!, nats: natsOf(sc, region), volume: VOLUME, lane: LANE, upstream, downstream, disk },
      REGION,
    );
    admitted.push({ id, site: SITES[s]!, publicKey });
    const p = new RoleProcess("holder", file, w.cwd);
    w.procs.push(p);
    holderProcs.set(id, p);
  }
  await Promise.all([...holderProcs.values()].map((p) => p.start()));
  // The operator's bootstrap: admit each holder's first incarnation, create the lane's obligation.
  await bootstrapControlLog(store, admitted, { volume: VOLUME, lane: LANE });
  return holderProcs;
}

/** Two controllers of the volume sharing it through the lease: the first to start claims it. */
async function startControllers(w: ChaosWorld, sc: SuperclusterHandle): Promise<Map<string, RoleProcess>> {
  const ctlProcs = new Map<string, RoleProcess>();
  for (const [id, region] of Object.entries(CONTROLLERS)) {
    const ctlFile = join(w.dir, `${id}.json`);
    writeFileSync(
      ctlFile,
      JSON.stringify({ role: "controller", nats: natsOf(sc, region), controller: controllerConfig(id), lease: LEASE }),
    );
    const ctl = new RoleProcess("controller", ctlFile, w.cwd);
    w.procs.push(ctl);
    ctlProcs.set(id, ctl);
    await ctl.start();
  }
  return ctlProcs;
}

/** The writer with its continuous workload, logging each acknowledged write to `acked.jsonl`. */
async function startWriter(
  w: ChaosWorld,
  sc: SuperclusterHandle,
): Promise<{ writer: RoleProcess; ackLog: string; dataKey: Buffer }> {
  const dataKeyFile = join(w.dir, "data.key");
  const dataKey = randomBytes(32);
  writeFileSync(dataKeyFile, dataKey, { mode: 0o600 });
  const ackLog = join(w.dir, "acked.jsonl");
  const holderSites = Object.fromEntries(Object.entries(HOLDERS).map(([h, [s]]) => [h, SITES[s]!]));
  const writerFile = writeWriterRole(
    join(w.dir, "writer.json"),
    {
      nats: natsOf(sc, "east"),
      stateDir: join(w.dir, "w1"),
      dataKeyFile,
      volume: VOLUME,
      lane: LANE,
      blockCount: BLOCKS,
      firstHops: ["h-e1", "h-e2"],
      holderSites,
      workload: { intervalMs: 10, ackLog },
    },
    REGION,
  );
  const writer = new RoleProcess("writer", writerFile, w.cwd);
  w.procs.push(writer);
  await writer.start();
  return { writer, ackLog, dataKey };
}

/** Watches the controller's status: the cut every required scenario keeps on fresh evidence. */
function followProtection(observer: NatsTransport): Protection {
  const protection: Protection = { protectedThrough: -1 };
  observer.subscribe(statusSubject(VOLUME), (m) => {
    try {
      const doc: VolumeStatus = decodeMessage(volumeStatusSpec, m.data);
      const req = doc.scenarios.filter((x) => x.required);
      let cut = Infinity;
      for (const x of req)
        cut = Math.min(cut, x.evidence === "observed" ? (x.cut?.find(([l]) => l === LANE)?.[1] ?? -1) : -1);
      if (Number.isFinite(cut)) protection.protectedThrough = cut;
    } catch {
      // not a status document we can read: ignore
    }
  });
  return protection;
}

/** The process a fault acts on: faults on the same one happen one after another. */
function targetOf(f: ChaosFault): string {
  return f.kind === ChaosFaultKind.holderKill
    ? f.holder
    : f.kind === ChaosFaultKind.controllerKill || f.kind === ChaosFaultKind.controllerPause
      ? "controller"
      : f.kind === ChaosFaultKind.controlLeaderKill
        ? "control-leader"
        : `server-${f.region}`;
}

/**
 * Injects the faults, each at its time in the window, and measures each from the moment it is over
 * until the acknowledged head then is protected. Waits out the window and returns those heal times.
 */
async function injectFaults(
  w: ChaosWorld,
  d: Deployment,
  protection: Protection,
  faults: readonly ChaosFault[],
  durationMs: number,
  log: Log,
): Promise<(number | null)[]> {
  w.t0 = Date.now();
  const t0 = w.t0;
  const heals: Promise<number | null>[] = [];
  const faultRuns: Promise<void>[] = [];
  // Faults on the same process happen one after another (a restart never races another).
  const busy = new Map<string, Promise<void>>();
  for (const f of faults) {
    const key = targetOf(f);
    const prev = busy.get(key) ?? Promise.resolve();
    let release!: () => void;
    busy.set(key, new Promise<void>((r) => (release = r)));
    faultRuns.push(
      (async () => {
        await sleep(Math.max(0, t0 + f.atMs - Date.now()));
        await prev;
        log(`  ${((Date.now() - t0) / 1000).toFixed(1)} s ${JSON.stringify(f)}`);
        await applyFault(w, d, f, log);
        release();
        heals.push(timeHeal(protection, ackedHead(d.ackLog), Date.now()));
      })(),
    );
  }
  await Promise.all(faultRuns);
  await sleep(Math.max(0, t0 + durationMs - Date.now()));
  return Promise.all(heals);
}

/** Seconds from `over` until the protected cut reaches `target`, or null after the heal timeout. */
async function timeHeal(protection: Protection, target: number, over: number): Promise<number | null> {
  while (Date.now() - over < HEAL_TIMEOUT_MS) {
    if (protection.protectedThrough >= target) return (Date.now() - over) / 1000;
    await sleep(100);
  }
  return null;
}

/** One fault, done and undone: it returns once the fault is over. */
async function applyFault(w: ChaosWorld, d: Deployment, f: ChaosFault, log: Log): Promise<void> {
  const tally = d.watch.tally;
  // The lease holder now (the first controller until the watch saw a lease).
  const activeController = () => d.ctlProcs.get(tally.activeController ?? "ctl-east")!;
  if (f.kind === ChaosFaultKind.serverRestart) {
    w.serverPids.push(d.sc.regions[f.region]!.pid);
    await d.sc.regions[f.region]!.restart({ kill: f.kill });
  } else if (f.kind === ChaosFaultKind.holderKill) {
    const p = d.holderProcs.get(f.holder)!;
    await p.kill();
    await sleep(f.downMs);
    await p.start();
  } else if (f.kind === ChaosFaultKind.controllerKill) {
    const ctl = activeController();
    log(`    active controller: ${tally.activeController ?? "(no lease seen)"}`);
    await ctl.kill();
    await sleep(f.downMs);
    await ctl.start();
  } else if (f.kind === ChaosFaultKind.controllerPause) {
    log(`    active controller: ${tally.activeController ?? "(no lease seen)"}`);
    await activeController().pause(f.ms);
  } else if (f.kind === ChaosFaultKind.controlLeaderKill) {
    await killControlLeader(w, d, f.downMs, log);
  } else {
    await d.sc.regions[f.region]!.pause(f.ms);
  }
}

/**
 * Kills the control stream's leader and restarts it after `downMs`. The leader elected now: wait (up to
 * the appenders' 30 s) for a probe newer than the fault to name one, so a follower is never killed for a
 * leader that already lost its place.
 */
async function killControlLeader(w: ChaosWorld, d: Deployment, downMs: number, log: Log): Promise<void> {
  const tally = d.watch.tally;
  const asked = Date.now();
  while ((tally.lastAnsweredMs ?? 0) <= asked && Date.now() - asked < CONTROL_UNAVAILABLE_BOUND_S * 1000)
    await sleep(100);
  const leader =
    Object.values(d.sc.control).find((c) => c.serverName === tally.streamLeader) ?? Object.values(d.sc.control)[0]!;
  log(`    stream leader: ${tally.streamLeader ?? "(none seen)"}; killing ${leader.serverName}`);
  w.serverPids.push(leader.pid);
  await leader.restart({ kill: true, downMs });
}

/**
 * The workload stops; everything acknowledged must end up protected. Waits (up to the heal timeout)
 * for that and names the acknowledged range still unprotected, if any.
 */
async function healAfterWorkload(
  d: Deployment,
  protection: Protection,
): Promise<{ acked: AckedWrite[]; finalHead: number; stranded: [number, number][] }> {
  await d.writer.stop();
  const acked = ackedWrites(d.ackLog);
  const finalHead = acked.reduce((m, a) => Math.max(m, a.seq), 0);
  const healStart = Date.now();
  while (protection.protectedThrough < finalHead && Date.now() - healStart < HEAL_TIMEOUT_MS) await sleep(200);
  const p = protection.protectedThrough;
  const stranded: [number, number][] = p >= finalHead ? [] : [[Math.max(1, p + 1), finalHead]];
  return { acked, finalHead, stranded };
}

/**
 * Recovery from everything the holders retain, compared with what was acknowledged: the acknowledged
 * writes missing from it or read back different. Every write counts as lost when recovery fails.
 */
async function countLost(
  w: ChaosWorld,
  d: Deployment,
  acked: readonly AckedWrite[],
  finalHead: number,
  log: Log,
): Promise<number> {
  const units: TransportUnit[] = [];
  for (const h of Object.keys(HOLDERS)) {
    try {
      units.push(...(await fetchUnits(d.observer, h, VOLUME, LANE, RangeSet.of(1, Math.max(1, finalHead)), 10_000)));
    } catch (err) {
      log(`  fetch from ${h} failed: ${(err as Error).message}`);
    }
  }
  const recDir = join(w.dir, "recovered");
  let lost = acked.length;
  try {
    const result = await recoverVolume({
      volume: VOLUME,
      dir: recDir,
      blockCount: BLOCKS,
      lanes: [LANE],
      dataKey: d.dataKey,
      units,
    });
    const vol = await SmartWalVolume.open(recDir);
    try {
      const newest = new Map<number, AckedWrite>();
      for (const a of acked) if (a.lsn <= result.lsn && (newest.get(a.lba)?.lsn ?? -1) < a.lsn) newest.set(a.lba, a);
      lost = acked.filter((a) => a.lsn > result.lsn).length;
      for (const [lba, a] of newest) {
        const got = await vol.read(lba, 1);
        if (!Buffer.from(got).equals(Buffer.from(workloadBlock(a.i)))) lost++;
      }
    } finally {
      await vol.close();
    }
  } catch (err) {
    log(`  recovery failed: ${(err as Error).message}`);
  }
  return lost;
}

/** Stops the roles, the observer and the servers in order, then counts the processes still alive. */
async function stopEverything(w: ChaosWorld, d: Deployment): Promise<number> {
  await Promise.all(w.procs.map((p) => p.stop()));
  await d.observer.close();
  w.observer = undefined;
  w.serverPids.push(...d.sc.pids);
  await d.sc.stop();
  w.sc = undefined;
  const pids = [...w.procs.flatMap((p) => p.pids), ...w.serverPids];
  await sleep(200);
  return pids.filter(pidAlive).length;
}

/** Whatever is still running after a failed run: kill it, and remove the run's directory. */
async function cleanUp(w: ChaosWorld): Promise<void> {
  await w.watch?.stop().catch(() => undefined);
  for (const p of w.procs) await p.kill().catch(() => undefined);
  await w.observer?.close().catch(() => undefined);
  await w.sc?.stop().catch(() => undefined);
  rmSync(w.dir, { recursive: true, force: true });
}

/** Bytes per write of the chaos workload (for reports). */
export const CHAOS_WRITE_BYTES = BLOCK_SIZE;
