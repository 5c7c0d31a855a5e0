/**
 * The demo's failure script, end to end on real processes: start the deployment, write (phase 1),
 * let Europe materialize a base from its own WAL copy, write (phase 2), take the policy engine's
 * prediction while everything is alive, SIGKILL the first region (writer, its holders, its
 * controller, its nats-server), let the waypoint keep forwarding to Europe, start replaying from
 * the second region and SIGKILL it half way, then recover at Europe from the waypoint's suffix
 * plus Europe's base and WAL; compare with the prediction and with the writer byte for byte.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { recoverVolume } from "../actors/repair/volume-recovery.ts";
import type { VolumeStatus } from "../actors/controller/status-document.ts";
import { RangeSet } from "../lanes/range-set.ts";
import type { TransportUnit } from "../lanes/transport-unit.ts";
import { SmartWalVolume } from "../volume/smartwal-volume.ts";
import { type TimelineBase, type TimelineSample, type TimelineScenario } from "./custody-timeline.ts";
import { edgeBetween, scenarioNames, type Deployment } from "./deployment.ts";
import { dataKeyOf } from "./key-material.ts";
import { killRegion, launchNetwork, makeRunDir, stopActors, type RunningNetwork } from "./network-launcher.ts";
import { ProcessRegistry } from "./process-registry.ts";
import { formatProgress } from "./progress-line.ts";
import { legRow, lostRange, type LegRow, type ScenarioRow } from "./scenario-table.ts";
import { contentAt, lbaOf, type AckedWrite } from "./workload.ts";

/** Options of `runDemo`. */
export interface DemoOptions {
  readonly deploymentPath: string;
  /** Fewer writes (the test mode). */
  readonly short?: boolean;
  /** Parent of the `runs/<timestamp>` folder (default: `<repo>/runs`). */
  readonly runRoot?: string;
  /** Where lines go (default stdout). `progress` lines rewrite one terminal line when `tty`. */
  readonly print?: (line: string) => void;
  readonly progress?: (line: string) => void;
}

/** A timeline event of the run. */
export interface DemoEvent {
  readonly tMs: number;
  readonly label: string;
}

/** Everything the run measured (also what the report draws). */
export interface DemoResult {
  readonly runDir: string;
  readonly deployment: Deployment;
  readonly prediction: VolumeStatus;
  readonly rows: ScenarioRow[];
  readonly legs: LegRow[];
  readonly samples: TimelineSample[];
  readonly events: DemoEvent[];
  readonly timelineScenarios: TimelineScenario[];
  readonly bases: TimelineBase[];
  /** Median ms from a unit's first capture anywhere to its capture at each holder. */
  readonly captureLagMs: Record<string, number>;
  readonly recovered: { cut: number; lsn: number; byteExact: boolean; dir: string; seconds: number };
  readonly predictedBothCut: number | null;
  readonly acknowledged: number;
  readonly startedPids: number[];
  readonly leftPids: number[];
  readonly elapsedSec: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface HolderStats {
  retained: [number, number][];
  bytes: number;
  captured: [number, number, number][];
}

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Runs the whole demo; always stops every process it started (also when it throws). */
export async function runDemo(opts: DemoOptions): Promise<DemoResult> {
  const print = opts.print ?? ((l: string) => console.log(l));
  const progress = opts.progress ?? print;
  const registry = new ProcessRegistry();
  const runDir = makeRunDir(opts.runRoot);
  const uninstall = registry.installSignalHandlers(() => console.error(`\ninterrupted: every process stopped; run folder ${runDir}`));
  const t0 = Date.now();
  try {
    print(`run folder: ${runDir}`);
    const net = await launchNetwork(registry, opts.deploymentPath, runDir);
    // For operators (and the interrupt test): what this run started, before anything can go wrong.
    writeFileSync(join(runDir, "pids.json"), JSON.stringify(registry.startedPids));
    print(`started ${registry.startedPids.length} processes (${Object.keys(net.regions).length} nats-servers, ${net.actors.size} actors) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return await script(net, registry, opts, print, progress, t0);
  } finally {
    await registry.stopAll();
    uninstall();
  }
}

async function script(net: RunningNetwork, registry: ProcessRegistry, opts: DemoOptions, print: (l: string) => void, progress: (l: string) => void, t0: number): Promise<DemoResult> {
  const d = net.deployment;
  const names = scenarioNames(d);
  const writer = net.actors.get(d.writer.id)!;
  const controller = () => net.actors.get(d.controller.id);
  const siteOf = new Map(d.holders.map((h) => [h.id, h.site]));
  const euStore = d.holders.find((h) => h.site === d.recoverAt && h.baseSnapshot) ?? d.holders.find((h) => h.site === d.recoverAt)!;
  const regionSites = (r: string) => new Set(d.sites.filter((s) => s.region === r).map((s) => s.id));
  const firstSites = regionSites(d.failures.first);
  const secondSites = regionSites(d.failures.second);
  const writerAz = d.sites.find((s) => s.id === d.writer.site)!.az;
  const holdersWhere = (pred: (site: string) => boolean) => d.holders.filter((h) => pred(h.site)).map((h) => h.id);
  const timelineScenarios: TimelineScenario[] = [
    { name: names.az, lostHolders: holdersWhere((s) => d.sites.find((x) => x.id === s)!.az === writerAz) },
    { name: names.first, lostHolders: holdersWhere((s) => firstSites.has(s)) },
    { name: names.both, lostHolders: holdersWhere((s) => firstSites.has(s) || secondSites.has(s)) },
  ];
  const bases: TimelineBase[] = d.holders.filter((h) => h.baseSnapshot).map((h) => ({ holder: h.id, cut: 0, fromMs: 0 }));
  const writes: AckedWrite[] = [];
  const samples: TimelineSample[] = [];
  const events: DemoEvent[] = [];
  const latest = new Map<string, HolderStats>();
  let phase = "start";
  let acked = 0;
  let receiptedCut: number | null = null;
  const event = (label: string) => {
    events.push({ tMs: Date.now() - t0, label });
    print(`  ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s  ${label}`);
  };

  const sample = async () => {
    const holders: Record<string, { retained: [number, number][]; bytes: number }> = {};
    await Promise.all(
      d.holders.map(async (h) => {
        const c = net.actors.get(h.id);
        if (c === undefined) return;
        const s = await c.call<HolderStats>("stats", {}, 3000).catch(() => undefined);
        if (s === undefined) return;
        latest.set(h.id, s);
        holders[h.id] = { retained: s.retained, bytes: s.bytes };
      }),
    );
    const ctl = controller();
    if (ctl !== undefined) {
      const st = await ctl.call<VolumeStatus | null>("status", {}, 3000).catch(() => null);
      receiptedCut = st?.survivingCut?.[0]?.[1] ?? receiptedCut;
    }
    samples.push({ tMs: Date.now() - t0, holders, acked });
    const custodyBytes: Record<string, number> = {};
    for (const [h, s] of Object.entries(holders)) {
      const site = siteOf.get(h)!;
      custodyBytes[site] = (custodyBytes[site] ?? 0) + s.bytes;
    }
    progress(formatProgress({ phase, writes: writes.length, acked, custodyBytes, receiptedCut }));
  };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sample().catch(() => undefined);
      await sleep(opts.short ? 200 : 400);
    }
  })();
  const retainedAt = (h: string) => RangeSet.fromJSON(latest.get(h)?.retained ?? []);
  const waitFor = async (what: string, cond: () => Promise<boolean> | boolean, ms = 15_000) => {
    const end = Date.now() + ms;
    while (!(await cond())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(50);
    }
  };
  const fetchStats = async (h: string) => {
    const s = await net.actors.get(h)!.call<HolderStats>("stats");
    latest.set(h, s);
    return s;
  };

  // A recovery at the destination from the named holders' units (+ Europe's base once it exists).
  let base: { dir: string; cut: number } | undefined;
  const recoverFrom = async (sources: readonly string[], name: string) => {
    const t = Date.now();
    const units = (await Promise.all(sources.map((id) => net.actors.get(id)!.call<TransportUnit[]>("units")))).flat();
    const dir = join(net.runDir, name, "volume");
    mkdirSync(join(net.runDir, name), { recursive: true });
    const useBase = base !== undefined && sources.includes(euStore.id);
    const res = await recoverVolume({ volume: d.volume, dir, blockCount: d.blocks, lanes: [d.lane], dataKey: dataKeyOf(net.keys), units, base: useBase ? { dir: base!.dir, cut: { [d.lane]: base!.cut } } : undefined });
    const seconds = (Date.now() - t) / 1000;
    const vol = await SmartWalVolume.open(dir);
    const got = await vol.read(0, d.blocks);
    await vol.close();
    const byteExact = Buffer.from(got).equals(Buffer.from(contentAt(writes, d.blocks, res.lsn)));
    return { cut: res.cut[d.lane] ?? 0, lsn: res.lsn, byteExact, dir, seconds };
  };
  const observed = new Map<string, { cut: number; seconds: number; byteExact: boolean }>();

  const total = opts.short ? d.workload.shortWrites : d.workload.writes;
  const blocks = d.workload.blocksPerWrite;
  const writeSome = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const k = writes.length;
      const lba = lbaOf(k, d.blocks, blocks);
      const seed = k + 1;
      const ack = await writer.call<{ lsn: number; seq: number }>("write", { lba, seed, blocks });
      writes.push({ lsn: ack.lsn, seq: ack.seq, lba, seed, blocks });
      acked = Math.max(acked, ack.seq);
      if (d.workload.writeIntervalMs > 0) await sleep(d.workload.writeIntervalMs);
    }
  };

  // Phase 1, then Europe builds a base at cut c0 from the WAL it holds itself.
  phase = "phase 1";
  event(`writing ${Math.floor(total / 2)} blocks`);
  const tWrite0 = Date.now();
  await writeSome(Math.floor(total / 2));
  const c0 = (await writer.call<{ heads: Record<string, number> }>("sync", { contract: d.writer.contract.name, timeoutMs: 15_000 })).heads[d.lane]!;
  await waitFor(`${euStore.id} to hold 1..${c0}`, async () => (await fetchStats(euStore.id)).retained.length > 0 && retainedAt(euStore.id).covers(1, c0));
  const baseDir = join(net.runDir, "eu-base", "volume");
  mkdirSync(join(net.runDir, "eu-base"), { recursive: true });
  const euUnits = await net.actors.get(euStore.id)!.call<TransportUnit[]>("units");
  await recoverVolume({ volume: d.volume, dir: baseDir, blockCount: d.blocks, lanes: [d.lane], dataKey: dataKeyOf(net.keys), units: euUnits, upTo: { [d.lane]: c0 } });
  await controller()!.call("addBase", { base: { id: `base-${euStore.id}-${c0}`, holder: euStore.id, cut: { [d.lane]: c0 }, bytes: c0 * 4096 * blocks } });
  bases.push({ holder: euStore.id, cut: c0, fromMs: Date.now() - t0 });
  base = { dir: baseDir, cut: c0 };
  event(`${euStore.id} materialized a base snapshot at #${c0} from its own WAL copy`);

  // Phase 2; then the prediction, taken while everything is alive.
  phase = "phase 2";
  await writeSome(total - Math.floor(total / 2));
  const head = (await writer.call<{ heads: Record<string, number> }>("sync", { contract: d.writer.contract.name, timeoutMs: 15_000 })).heads[d.lane]!;
  const writeSec = (Date.now() - tWrite0) / 1000;
  acked = Math.max(acked, head);
  event(`${writes.length} writes acknowledged through #${head}; '${d.writer.contract.name}' protection proven by receipts`);
  await waitFor("Europe to hold the whole log", async () => (await fetchStats(euStore.id)).retained.length > 0 && retainedAt(euStore.id).covers(1, head));
  await waitFor("the controller to see the final receipts", async () => {
    const st = await controller()!.call<VolumeStatus | null>("evaluate");
    return (st?.acknowledged[0]?.[1] ?? 0) >= head;
  });
  const prediction = (await controller()!.call<VolumeStatus | null>("evaluate"))!;
  const predicted = (name: string) => prediction.scenarios.find((s) => s.name === name);
  const predictedBoth = predicted(names.both)?.cut?.[0]?.[1] ?? null;
  event(`prediction before any failure: '${names.both}' keeps #${predictedBoth ?? "nothing"} via ${predicted(names.both)?.contributors.join(", ")}`);
  await sample();
  for (const h of d.holders) await fetchStats(h.id).catch(() => undefined);

  // The AZ scenario, played without killing anything: recover only from holders outside the AZ.
  const azSurvivors = d.holders.filter((h) => !timelineScenarios[0]!.lostHolders.includes(h.id)).map((h) => h.id);
  const az = await recoverFrom(azSurvivors, "recovered-az");
  observed.set(names.az, az);
  event(`'${names.az}' played from ${azSurvivors.join(" + ")} only: cut #${az.cut}, ${az.byteExact ? "byte-exact" : "MISMATCH"}, ${az.seconds.toFixed(2)} s`);

  // East dies. The waypoint keeps forwarding to Europe.
  phase = `${d.failures.first} lost`;
  const tEast = Date.now();
  const killed = await killRegion(registry, net, d.failures.first);
  event(`SIGKILL ${d.failures.first}: ${killed.join(", ")} and its nats-server`);
  const waypoint = d.holders.find((h) => h.downstream.includes(euStore.id));
  if (waypoint !== undefined && net.actors.has(waypoint.id)) {
    const wp = RangeSet.fromJSON((await fetchStats(waypoint.id)).retained);
    await waitFor("Europe to catch up with the waypoint", async () => RangeSet.fromJSON((await fetchStats(euStore.id)).retained).coversAll(wp), 10_000);
    event(`forwarding continued: ${euStore.id} holds everything ${waypoint.id} holds`);
  }

  // What survives the first region's loss, recovered from every survivor (a full replay, West included).
  const firstSurvivors = [...net.actors.keys()].filter((id) => d.holders.some((h) => h.id === id));
  const first = await recoverFrom(firstSurvivors, "recovered-first");
  observed.set(names.first, first);
  event(`'${names.first}' recovered from ${firstSurvivors.join(" + ")}: cut #${first.cut}, ${first.byteExact ? "byte-exact" : "MISMATCH"}, ${first.seconds.toFixed(2)} s`);

  // Replay starts from the second region, which dies part way through.
  phase = `replay; ${d.failures.second} dying`;
  const secondHolders = d.holders.filter((h) => secondSites.has(h.site) && net.actors.has(h.id));
  let replayed = 0;
  for (const h of secondHolders) {
    const units = await net.actors.get(h.id)!.call<TransportUnit[]>("units");
    replayed += Math.floor(units.length * d.failures.westKillAfterReplayFraction);
  }
  const westKilled = await killRegion(registry, net, d.failures.second);
  event(`SIGKILL ${d.failures.second} during replay after ${replayed} units: ${westKilled.join(", ")}; its partial replay is abandoned`);

  // Recover at Europe from what survives: the waypoint's suffix + Europe's base and WAL.
  phase = `recovering at ${d.recoverAt}`;
  const sources = [...net.actors.keys()].filter((id) => d.holders.some((h) => h.id === id));
  const final = await recoverFrom(sources, "recovered");
  const { byteExact, seconds: recSec, dir: recDir } = final;
  const recCut = final.cut;
  const result = { lsn: final.lsn };
  observed.set(names.both, final);
  observed.set(names.timeline, final);
  event(`recovered at ${d.recoverAt} from ${sources.join(" + ")} + base #${c0}: cut #${recCut} (LSN ${result.lsn}), ${byteExact ? "byte-exact" : "MISMATCH"} vs the writer, ${recSec.toFixed(2)} s after the replay started (${((Date.now() - tEast) / 1000).toFixed(2)} s after ${d.failures.first} died)`);
  phase = "done";
  await sample();
  sampling = false;
  await sampler;

  // Chasing the light: how long after a unit's first capture each holder captured it.
  const firstCapture = new Map<number, number>();
  for (const s of latest.values()) for (const [f, , at] of s.captured) firstCapture.set(f, Math.min(firstCapture.get(f) ?? Infinity, at));
  const captureLagMs: Record<string, number> = {};
  for (const [h, s] of latest) captureLagMs[h] = median(s.captured.map(([f, , at]) => at - firstCapture.get(f)!));

  const rows: ScenarioRow[] = prediction.scenarios.map((s) => {
    const cut = s.cut?.[0]?.[1] ?? null;
    const seen = observed.get(s.name);
    return {
      scenario: s.name,
      required: s.required,
      predictedCut: cut,
      observedCut: seen?.cut,
      acknowledged: head,
      lostRange: lostRange(cut, head),
      rpoSeqs: s.lostSeqs,
      rpoBytes: s.lostBytes,
      rpoAgeMs: s.oldestLostAgeMs,
      rtoEstimateSec: s.rtoSec,
      rtoMeasuredSec: seen?.seconds,
      contributors: s.contributors,
    };
  });
  // Every custody leg carries the whole stream: price it at the rate Europe actually received.
  const euBytes = latest.get(euStore.id)?.bytes ?? 0;
  const rate = euBytes / Math.max(writeSec, 0.001);
  const legs: LegRow[] = [];
  const legOf = (from: string, to: string) => {
    const e = edgeBetween(d, from, to);
    legs.push(legRow(from, to, e?.pricePerGb ?? 0, rate));
  };
  for (const h of d.writer.holders) legOf(d.writer.site, siteOf.get(h)!);
  for (const h of d.holders) for (const x of h.downstream) legOf(h.site, siteOf.get(x)!);

  await stopActors(net);
  await registry.stopAll();
  const leftPids = registry.livePids();
  const out: DemoResult = {
    runDir: net.runDir,
    deployment: d,
    prediction,
    rows,
    legs,
    samples,
    events,
    timelineScenarios,
    bases,
    captureLagMs,
    // byte-exact only if every recovery of the run (each played scenario) was.
    recovered: { cut: recCut, lsn: result.lsn, byteExact: byteExact && [...observed.values()].every((o) => o.byteExact), dir: recDir, seconds: recSec },
    predictedBothCut: predictedBoth,
    acknowledged: head,
    startedPids: [...registry.startedPids],
    leftPids,
    elapsedSec: (Date.now() - t0) / 1000,
  };
  writeFileSync(join(net.runDir, "result.json"), JSON.stringify(out));
  return out;
}
