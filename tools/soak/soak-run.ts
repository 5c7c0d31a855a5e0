import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { controlStreamName, initJetStreamControlLog } from "../../transport/index.ts";
import type { CompactionResult } from "../../custody/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import { gatherProcessStats, type ProcessStats } from "../../actors/runtime/index.ts";
import {
  bootstrapControlLog,
  custodyCommand,
  pidAlive,
  reapOnExit,
  RoleProcess,
  startSupercluster,
  type SuperclusterHandle,
} from "../../test/kit/index.ts";
import { linearSlope, percentile } from "./soak-math.ts";
import {
  holderRoles,
  LANE,
  MB,
  REGION,
  startControllerAndBuilder,
  stopAsAnOperator,
  VOLUME,
  writeSoakWriter,
} from "./soak-deployment.ts";
import { watchVerdicts, type VerdictFlap } from "./verdict-watch.ts";

/** Options of one soak run. */
export interface SoakOptions {
  readonly minutes: number;
  /** Writes per second of 4 KiB (queue depth 8). */
  readonly rate: number;
  /** Seconds between samples (default 10). */
  readonly sampleS?: number;
  /** Sequences of new WAL per rolling base (default 20 s of writes). */
  readonly baseEverySeqs?: number;
  /**
   * Seconds between the compactions of the control log (a snapshot, then a purge below it:
   * `custody log compact --every`, a process of its own), each only when COMPACT_EVERY_ENTRIES were
   * committed since the last. Default 15; 0 never compacts (the log grows as before).
   */
  readonly compactEveryS?: number;
  readonly log?: (line: string) => void;
  /** Called with each minute's row as it completes. */
  readonly onMinute?: (row: SoakMinute) => void;
}

/** One minute of the soak, as the table prints it. */
export interface SoakMinute {
  readonly minute: number;
  readonly writes_per_s: number;
  readonly releases: number;
  readonly bases: number;
  readonly rss_mb: Readonly<Record<string, number>>;
  readonly eval_ms_p99: number;
  readonly ctl_loop_p99_ms: number;
  readonly custody_lag_max_seqs: number;
  readonly retained_mb_max: number;
  readonly store_disk_mb: number;
  readonly control_log_mb: number;
  /** Changes of any scenario's verdict in this minute. */
  readonly verdict_flaps: number;
}

/** The soak's result: the keys #17 names, and what else an operator would want to see. */
export interface SoakResult {
  readonly minutes: number;
  readonly rate: number;
  readonly writes: number;
  readonly releases: number;
  readonly bases: number;
  /** The base builder's counters at the end (`base_build_<code>` counts builds that failed, by code). */
  readonly base_builder_counters: Readonly<Record<string, number>>;
  /** Worst role process's RSS slope over the second half (MB/min). */
  readonly rss_slope_mb_per_min_max: number;
  readonly rss_slope_mb_per_min: Readonly<Record<string, number>>;
  readonly nats_rss_slope_mb_per_min_max: number;
  readonly eval_ms_p99_first_minute: number;
  readonly eval_ms_p99_last_minute: number;
  readonly custody_lag_max_seqs: number;
  readonly custody_lag_max_seqs_second_half: number;
  /** Largest retained bytes (RAM + disk) of any holder at any sample. */
  readonly retained_bytes_max: number;
  readonly retained_ram_bytes_max: number;
  /**
   * The store holder's state directory, read every second: its slope once bases roll (from the
   * second base on; MB/min), its peak, and its lowest reading in each minute (MB; the floor the
   * sawtooth falls back to after each base).
   */
  readonly store_disk_bytes_slope_mb_per_min: number;
  readonly store_disk_bytes_max: number;
  readonly store_disk_floor_mb_by_minute: readonly number[];
  readonly base_bytes: number;
  /**
   * The control log's JetStream stream (every release is an event): slope over the samples after
   * the first compaction (over the second half when there was none).
   */
  readonly control_log_bytes_slope_mb_per_min: number;
  readonly control_log_bytes: number;
  /** Compactions (snapshot + purge below it) during the run, and the entries they purged. */
  readonly control_log_snapshots: number;
  readonly control_log_purged_entries: number;
  /** Size of the newest snapshot's canonical bytes (the folded state). */
  readonly control_log_snapshot_bytes: number;
  readonly process_restarts: number;
  readonly leftover_processes: number;
  /**
   * Changes of any scenario's verdict between consecutive status documents of the controller, from
   * its start to the end of the run (no fault is injected in a soak): must be 0. With the
   * documents watched, and the most writes a scenario had in flight and overdue in any of them.
   */
  readonly verdict_flaps: number;
  readonly verdict_documents: number;
  /** Of those, the documents in which some scenario was not met. */
  readonly verdict_not_met_documents: number;
  readonly in_flight_seqs_max: number;
  readonly overdue_seqs_max: number;
  readonly per_minute: readonly SoakMinute[];
}

/** Entries committed since the last snapshot before the soak's operator takes another. */
const COMPACT_EVERY_ENTRIES = 50;

function dirBytes(path: string): number {
  let n = 0;
  let names: string[];
  try {
    names = readdirSync(path);
  } catch {
    return 0;
  }
  for (const name of names) {
    try {
      const st = statSync(join(path, name));
      n += st.isDirectory() ? dirBytes(join(path, name)) : st.size;
    } catch {
      // deleted while we looked
    }
  }
  return n;
}

function procRssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** How each soak process connects to its region's server. */

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** One sample of the whole deployment. */
interface Sample {
  readonly t: number;
  readonly stats: readonly ProcessStats[];
  readonly natsRss: Readonly<Record<string, number>>;
  readonly storeDisk: number;
  readonly controlLog: number;
}

const key = (s: ProcessStats) => (s.role === "holder" ? s.id : s.role);

/** MB per minute each role's (and the worst nats-server's) resident memory grew over the run's second half. */
function rssSlopes(
  samples: readonly Sample[],
  second: readonly Sample[],
  regions: readonly string[],
): { rssSlope: Record<string, number>; natsSlope: number } {
  const slope = (pts: [number, number][]) => round(linearSlope(pts), 3);
  const roles = [...new Set(samples.flatMap((s) => s.stats.map(key)))];
  const rssSlope: Record<string, number> = {};
  for (const r of roles) {
    rssSlope[r] = slope(
      second.flatMap((s) =>
        s.stats.filter((x) => key(x) === r).map((x): [number, number] => [s.t / 60_000, x.rssBytes / MB]),
      ),
    );
  }
  const natsSlope = Math.max(
    ...regions.map((r) => slope(second.map((s): [number, number] => [s.t / 60_000, (s.natsRss[r] ?? 0) / MB]))),
  );
  return { rssSlope, natsSlope };
}

/**
 * The store's disk (read every second) once bases roll: from the first 10-s sample that saw the
 * second base, when the store has released below a base at least once. Taken over the whole rest
 * of the run rather than its second half: each tooth of the sawtooth falls back to a floor that
 * varies by tens of MB with the base's lag, and over 15 minutes that alone judged a flat floor
 * growing (|slope| > 1 MB/min) in 3% of modelled runs read every second and 15% read every 10 s;
 * over 27 minutes in none (test/soak/soak.test.ts).
 */
function storeDiskFigures(
  storeDisk: readonly (readonly [number, number])[],
  samples: readonly Sample[],
  minutes: number,
): Pick<SoakResult, "store_disk_bytes_slope_mb_per_min" | "store_disk_bytes_max" | "store_disk_floor_mb_by_minute"> {
  const bases = (x: Sample) => x.stats.find((p) => p.role === "base-builder")?.counters["bases_built"] ?? 0;
  const rolling = samples.find((x) => bases(x) >= 2)?.t ?? Infinity;
  const after = storeDisk.filter(([t]) => t >= rolling).map(([t, bytes]): [number, number] => [t / 60_000, bytes / MB]);
  const floors: number[] = [];
  for (const [t, bytes] of storeDisk) {
    const minute = Math.floor(t / 60_000);
    if (minute >= minutes) continue; // a read after the run's last minute, while the soak stops
    floors[minute] = Math.min(floors[minute] ?? Infinity, round(bytes / MB, 1));
  }
  return {
    store_disk_bytes_slope_mb_per_min: round(linearSlope(after), 3),
    store_disk_bytes_max: Math.max(0, ...storeDisk.map(([, bytes]) => bytes)),
    store_disk_floor_mb_by_minute: Array.from(floors, (f) => f ?? 0),
  };
}

/** The soak's figures over the run (all but the processes left running), from its samples. */
function soakFigures(
  o: SoakOptions,
  run: {
    samples: readonly Sample[];
    storeDisk: readonly (readonly [number, number])[];
    evalByMinute: ReadonlyMap<number, number[]>;
    minuteRows: SoakMinute[];
    t0: number;
    regions: readonly string[];
    compactions: readonly (CompactionResult & { t: number })[];
    verdicts: ReturnType<typeof watchVerdicts>["tally"];
    dir: string;
    restarts: number;
  },
): Omit<SoakResult, "leftover_processes"> {
  const { samples, storeDisk, evalByMinute, minuteRows, t0, regions, compactions, verdicts, dir, restarts } = run;
  const half = (o.minutes * 60_000) / 2;
  const second = samples.filter((s) => s.t >= half);
  const firstSnapshotAt = compactions[0]?.t;
  const compacted = firstSnapshotAt === undefined ? second : samples.filter((s) => s.t > firstSnapshotAt - t0);
  const { rssSlope, natsSlope } = rssSlopes(samples, second, regions);
  const fig = (s: ProcessStats, k: string) => s.figures[k] ?? 0;
  const all = samples.flatMap((s) => s.stats);
  const last = samples.at(-1);
  const counterOf = (role: string, c: string) => last?.stats.find((s) => s.role === role)?.counters[c] ?? 0;
  const firstEval = evalByMinute.get(1) ?? [];
  const lastEval = evalByMinute.get(Math.max(...evalByMinute.keys())) ?? [];
  const lagAll = all.filter((s) => s.role === "writer").map((s) => fig(s, "custodyLagSeqs"));
  const lagSecond = second.flatMap((s) =>
    s.stats.filter((x) => x.role === "writer").map((x) => fig(x, "custodyLagSeqs")),
  );
  return {
    minutes: o.minutes,
    rate: o.rate,
    writes: last?.stats.find((s) => s.role === "writer")?.figures["workloadWrites"] ?? 0,
    releases: counterOf("controller", "release_committed"),
    bases: last?.stats.find((s) => s.role === "base-builder")?.counters["bases_built"] ?? 0,
    base_builder_counters: last?.stats.find((s) => s.role === "base-builder")?.counters ?? {},
    rss_slope_mb_per_min_max: Math.max(...Object.values(rssSlope)),
    rss_slope_mb_per_min: rssSlope,
    nats_rss_slope_mb_per_min_max: natsSlope,
    eval_ms_p99_first_minute: round(percentile(firstEval, 0.99)),
    eval_ms_p99_last_minute: round(percentile(lastEval, 0.99)),
    custody_lag_max_seqs: Math.max(0, ...lagAll),
    custody_lag_max_seqs_second_half: Math.max(0, ...lagSecond),
    retained_bytes_max: Math.max(0, ...all.filter((s) => s.role === "holder").map((s) => fig(s, "retainedBytes"))),
    retained_ram_bytes_max: Math.max(
      0,
      ...all.filter((s) => s.role === "holder").map((s) => fig(s, "retainedRamBytes")),
    ),
    ...storeDiskFigures(storeDisk, samples, o.minutes),
    base_bytes: dirBytes(join(dir, "bases")),
    control_log_bytes_slope_mb_per_min: round(
      linearSlope(compacted.map((s): [number, number] => [s.t / 60_000, s.controlLog / MB])),
      4,
    ),
    control_log_bytes: last?.controlLog ?? 0,
    control_log_snapshots: compactions.length,
    control_log_purged_entries: compactions.reduce((n, c) => n + c.purged, 0),
    control_log_snapshot_bytes: compactions.at(-1)?.snapshotBytes ?? 0,
    process_restarts: restarts,
    verdict_flaps: verdicts.flaps.length,
    verdict_documents: verdicts.documents,
    verdict_not_met_documents: verdicts.notMetDocuments,
    in_flight_seqs_max: verdicts.inFlightMax,
    overdue_seqs_max: verdicts.overdueMax,
    per_minute: minuteRows,
  };
}

/** What the soak saw, one part of the run at a time (the `run` of sampleRun). */
interface SampledRun {
  connection: NatsTransport["connection"];
  jsm: Awaited<ReturnType<typeof jetstreamManager>>;
  sc: SuperclusterHandle;
  dir: string;
  verdicts: ReturnType<typeof watchVerdicts>;
  t0: number;
  sampleMs: number;
  log: (line: string) => void;
}

/**
 * What the soak saw: a sample every `sampleMs`, the controller's evaluation times by minute, a row
 * per minute, and the store's disk every second.
 */
async function sampleRun(
  o: SoakOptions,
  run: SampledRun,
): Promise<{
  samples: Sample[];
  storeDisk: [number, number][];
  evalByMinute: Map<number, number[]>;
  minuteRows: SoakMinute[];
}> {
  // The store's disk is a sawtooth with one tooth per base (about 25 s at 1,000 writes/s): read
  // every 10 s, a tooth is two or three points and the slope follows where they happened to fall.
  const storeDisk: [number, number][] = [];
  const read = () => storeDisk.push([Date.now() - run.t0, dirBytes(join(run.dir, "h-store"))]);
  const diskTimer = setInterval(read, 1_000);
  try {
    return { ...(await sampleEvery(o, run)), storeDisk };
  } finally {
    clearInterval(diskTimer);
  }
}

/** Every process's stats, the NATS servers' RSS and the control log every `sampleMs`; a row per minute. */
async function sampleEvery(
  o: SoakOptions,
  run: SampledRun,
): Promise<{ samples: Sample[]; evalByMinute: Map<number, number[]>; minuteRows: SoakMinute[] }> {
  const { connection, jsm, sc, dir, verdicts, t0, sampleMs, log } = run;
  let flapsLogged = 0;
  const samples: Sample[] = [];
  const evalByMinute = new Map<number, number[]>();
  const totalMs = o.minutes * 60_000;
  const minuteRows: SoakMinute[] = [];
  let minuteStart = 0;
  // Samples at fixed offsets k × sampleMs, so every minute has the same number of them.
  for (let k = 1; k * sampleMs <= totalMs; k++) {
    await sleep(Math.max(0, t0 + k * sampleMs - Date.now()));
    const t = Date.now() - t0;
    const { stats } = await gatherProcessStats(connection, { waitMs: 1_000 });
    const natsRss = Object.fromEntries(Object.entries(sc.regions).map(([r, s]) => [r, procRssBytes(s.pid)]));
    let controlLog = samples.at(-1)?.controlLog ?? 0;
    try {
      controlLog = (await jsm.streams.info(controlStreamName(REGION))).state.bytes;
    } catch {
      // the server is busy: keep the last figure
    }
    samples.push({ t, stats, natsRss, storeDisk: dirBytes(join(dir, "h-store")), controlLog });
    const minute = Math.ceil((k * sampleMs) / 60_000);
    const evals = evalByMinute.get(minute) ?? [];
    evals.push(...(stats.find((s) => s.role === "controller")?.samples?.["evalMs"] ?? []));
    evalByMinute.set(minute, evals);
    for (const f of verdicts.tally.flaps.slice(flapsLogged))
      log(
        `soak: verdict of ${f.scenario} ` +
          `${f.from} -> ${f.to}${f.reasons.length > 0 ? `: ${f.reasons.join("; ")}` : ""}`,
      );
    flapsLogged = verdicts.tally.flaps.length;
    if ((k * sampleMs) % 60_000 === 0 || (k + 1) * sampleMs > totalMs) {
      const row = minuteRow(
        minute,
        samples.slice(minuteStart),
        samples,
        evals,
        flapsIn(verdicts.tally.flaps, minute, t0 + (minute - 1) * 60_000, t0 + minute * 60_000),
      );
      minuteStart = samples.length;
      minuteRows.push(row);
      o.onMinute?.(row);
    }
  }
  return { samples, evalByMinute, minuteRows };
}

/** The soak's own connection, reading stats, status documents and the control log. */
function connectObserver(servers: string): Promise<NatsTransport> {
  return NatsTransport.connect({ servers, name: "soak-observer", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
}

/**
 * A long run of the deployment #17 describes, each role its own `custody run` process: a
 * two-region supercluster with JetStream, a writer (4 KiB writes at `rate`/s, queue depth 8), a
 * RAM chain across the regions (h-ram1 → h-ram2), a disk store with a base builder beside it,
 * and a controller evaluating every 50 ms that commits releases (RAM holders release what the
 * store made durable; the store releases what a rolling base contains). Samples every process
 * (`custody.v1.ps.all`), the store's disk and the control log every `sampleS` seconds.
 */
export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const log = o.log ?? (() => undefined);
  const sampleMs = (o.sampleS ?? 10) * 1000;
  const dir = mkdtempSync(join(tmpdir(), "custody-soak-"));
  const cwd = process.cwd();
  let sc: SuperclusterHandle | undefined;
  const procs: RoleProcess[] = [];
  let observer: NatsTransport | undefined;
  try {
    sc = await startSupercluster({ regions: ["east", "west"] });
    const url = (region: string) => sc!.regions[region]!.url;
    const nats = (region: string) => ({ servers: url(region), maxReconnectAttempts: -1, reconnectTimeWaitMs: 250 });
    observer = await connectObserver(url("east"));
    const { log: store } = await initJetStreamControlLog(observer.connection, { region: REGION });
    await store.close();

    const { admitted, ramHolders } = holderRoles(dir, nats, cwd, procs);
    await Promise.all(procs.map((p) => p.start()));
    await bootstrapControlLog(store, admitted, { volume: VOLUME, lane: LANE });

    // Every status document from the controller's first on: no scenario's verdict may change.
    const verdicts = watchVerdicts(observer, VOLUME);
    const dataKeyFile = join(dir, "data.key");
    writeFileSync(dataKeyFile, randomBytes(32), { mode: 0o600 });
    const baseEvery = o.baseEverySeqs ?? Math.max(1000, o.rate * 20);
    await startControllerAndBuilder(dir, nats, cwd, procs, dataKeyFile, baseEvery);

    const writerFile = writeSoakWriter(dir, nats("east"), dataKeyFile, o.rate);
    const writer = new RoleProcess("writer", writerFile, cwd);
    procs.push(writer);
    await writer.start();
    log(
      `soak: deployment up (${procs.length} role processes, 2 nats-servers); ` +
        `${o.minutes} min at ${o.rate} writes/s of 4 KiB, depth 8; ` +
        `a base every ${baseEvery} sequences; watch it with: custody status ${VOLUME} --server ${url("east")} --watch`,
    );

    const jsm = await jetstreamManager(observer.connection);
    const compaction = startCompaction(url("east"), (o.compactEveryS ?? 15) * 1000, log);
    const t0 = Date.now();
    const seen = await sampleRun(o, { connection: observer.connection, jsm, sc, dir, verdicts, t0, sampleMs, log });

    await compaction.stop();
    verdicts.stop();
    const result = soakFigures(o, {
      ...seen,
      t0,
      regions: Object.keys(sc.regions),
      compactions: compaction.done,
      verdicts: verdicts.tally,
      dir,
      restarts: procs.reduce((n, p) => n + p.restarts, 0),
    });

    await stopAsAnOperator(writer, ramHolders, procs);
    await observer.close();
    observer = undefined;
    const pids = [...procs.flatMap((p) => p.pids), ...compaction.pids, ...sc.pids];
    await sc.stop();
    sc = undefined;
    await sleep(200);
    return { ...result, leftover_processes: pids.filter(pidAlive).length };
  } finally {
    for (const p of procs) await p.kill().catch(() => undefined);
    await observer?.close().catch(() => undefined);
    await sc?.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The operator's compaction as the product runs it: a `custody log compact --every` process of its
 * own (the log is unsigned here, as the soak's controller commits unsigned, so the snapshots are
 * too). Each compaction it prints is noted with the time it arrived.
 */
function startCompaction(
  server: string,
  everyMs: number,
  log: (line: string) => void,
): { done: (CompactionResult & { t: number })[]; pids: number[]; stop(): Promise<void> } {
  const done: (CompactionResult & { t: number })[] = [];
  if (everyMs <= 0) return { done, pids: [], stop: async () => undefined };
  const c = custodyCommand([
    "log",
    "compact",
    "--region",
    REGION,
    "--server",
    server,
    "--every",
    String(everyMs / 1000),
    "--min-entries",
    String(COMPACT_EVERY_ENTRIES),
    "--json",
  ]);
  const child = spawn(c.command, c.args, { stdio: ["ignore", "pipe", "pipe"] });
  reapOnExit(child);
  const ended = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  createInterface({ input: child.stdout! }).on("line", (line) => {
    try {
      done.push({ ...(JSON.parse(line) as CompactionResult), t: Date.now() });
    } catch {
      log(`soak: compactor: ${line}`);
    }
  });
  createInterface({ input: child.stderr! }).on("line", (line) => log(`soak: compactor: ${line}`));
  return {
    done,
    pids: child.pid === undefined ? [] : [child.pid],
    stop: async () => {
      child.kill("SIGTERM");
      await ended;
    },
  };
}

/**
 * Flaps before `to` and, after the first minute (which also counts those before the load began), at or
 * after `from`.
 */
function flapsIn(flaps: readonly VerdictFlap[], minute: number, from: number, to: number): number {
  return flaps.filter((f) => f.atMs < to && (minute === 1 || f.atMs >= from)).length;
}

function minuteRow(
  minute: number,
  inMinute: readonly Sample[],
  all: readonly Sample[],
  evals: readonly number[],
  verdictFlaps: number,
): SoakMinute {
  const lastS = inMinute.at(-1)!;
  const prevIndex = all.indexOf(inMinute[0]!) - 1;
  const prev = prevIndex >= 0 ? all[prevIndex] : undefined;
  const writerNow = lastS.stats.find((s) => s.role === "writer");
  const writerBefore = prev?.stats.find((s) => s.role === "writer");
  const dt = (lastS.t - (prev?.t ?? 0)) / 1000;
  const writes = (writerNow?.figures["workloadWrites"] ?? 0) - (writerBefore?.figures["workloadWrites"] ?? 0);
  const rss: Record<string, number> = {};
  for (const s of inMinute)
    for (const x of s.stats) rss[key(x)] = Math.max(rss[key(x)] ?? 0, Math.round(x.rssBytes / MB));
  const stats = inMinute.flatMap((s) => s.stats);
  return {
    minute,
    writes_per_s: Math.round(writes / Math.max(dt, 1e-3)),
    releases: lastS.stats.find((s) => s.role === "controller")?.counters["release_committed"] ?? 0,
    bases: lastS.stats.find((s) => s.role === "base-builder")?.counters["bases_built"] ?? 0,
    rss_mb: rss,
    eval_ms_p99: round(percentile([...evals], 0.99)),
    ctl_loop_p99_ms: Math.max(0, ...stats.filter((s) => s.role === "controller").map((s) => s.eventLoopP99Ms)),
    custody_lag_max_seqs: Math.max(
      0,
      ...stats.filter((s) => s.role === "writer").map((s) => s.figures["custodyLagSeqs"] ?? 0),
    ),
    retained_mb_max: round(
      Math.max(0, ...stats.filter((s) => s.role === "holder").map((s) => s.figures["retainedBytes"] ?? 0)) / MB,
      1,
    ),
    store_disk_mb: round(lastS.storeDisk / MB, 1),
    control_log_mb: round(lastS.controlLog / MB, 2),
    verdict_flaps: verdictFlaps,
  };
}
