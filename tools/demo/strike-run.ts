/**
 * One run of a deployment under load, on real processes started as an operator would (`custody
 * init`, `custody bootstrap`, `custody run` for every role): every volume's writer streams its
 * workload, the strike lands mid-stream (SIGKILL every process of two regions and their
 * nats-servers in the same instant), the survivors account for what reached them, the controllers'
 * prediction is read from their status documents, every volume is recovered at the destination
 * from the survivors' units (fetched over NATS as `custody recover` does), and compared: the
 * recovered cut must equal the predicted one exactly.
 */
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fetchUnits, recoverVolume } from "../../actors/index.ts";
import { CustodyError } from "../../core/index.ts";
import type { VolumeStatus } from "../../transport/protocol/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { SmartWalVolume } from "../../volume/index.ts";
import type { TimelineSample } from "./custody-timeline.ts";
import { ackLogOf, controllerIdOf, writerIdOf } from "./custody-deployment.ts";
import { scenarioNames, volumesOf, type Deployment } from "./deployment.ts";
import { launchNetwork, strikeRegions, type RunningNetwork } from "./network-launcher.ts";
import { OperatorView } from "./operator-view.ts";
import type { ProcessRegistry } from "./process-registry.ts";
import { clock, formatProgress } from "./progress-line.ts";
import { settledSurvivors, type HolderStats } from "./settle.ts";
import { recordStrikeSpan } from "./strike-span.ts";
import { admitOutcome, readRunSpans, seqRange, startMs } from "../../actors/runtime/telemetry/index.ts";
import { deploymentOfVolume } from "./waypoint-variant.ts";
import { lsnOffset, readVolumeAckLog, workloadContentThrough, type AckedWrite } from "./workload.ts";

/** A timeline event of a run. */
export interface DemoEvent {
  readonly tMs: number;
  readonly label: string;
}

/** What one volume lost in the strike, predicted and observed. */
export interface VolumeOutcome {
  readonly volume: string;
  /** The volume's custody path: "with waypoint" or "without <holder>". */
  readonly path: string;
  /** Highest lane sequence whose acknowledgement reached the application before the strike. */
  readonly acknowledged: number;
  /** The controller's cut for the strike's scenario from the survivors' receipts (null: nothing survives). */
  readonly predictedCut: number | null;
  /** The same scenario's cut in the last evaluation before the strike (receipts still in flight then). */
  readonly cutAtStrike: number | null;
  readonly recoveredCut: number;
  readonly recoveredLsn: number;
  /** Acknowledged sequences the recovery does not have. */
  readonly lostSeqs: number;
  readonly byteExact: boolean;
  readonly contributors: readonly string[];
  readonly recoverySec: number;
}

/** Everything one run measured. */
export interface RunResult {
  readonly deployment: Deployment;
  readonly runDir: string;
  readonly scenario: string;
  readonly samples: TimelineSample[];
  readonly events: DemoEvent[];
  readonly strikeMs: number;
  /** Ms from the strike until every survivor had accounted for what it holds. */
  readonly settleMs: number;
  readonly outcomes: VolumeOutcome[];
  /** The settled status of the first volume (every scenario, for the table). */
  readonly status: VolumeStatus;
  /** Survivors' retained ranges of each volume once settled. */
  readonly survivorRanges: Record<string, Record<string, [number, number][]>>;
  readonly writes: number;
  /** Acknowledged MB/s over the stream (writes acknowledged since every writer served), in total and per volume. */
  readonly writeMBps: number;
  readonly writeMBpsByVolume: Record<string, number>;
  readonly latest: Map<string, HolderStats>;
  /** Seconds the writers streamed before the strike (from when every writer served). */
  readonly streamSec: number;
  /**
   * Volume → holder → how far its highest retained (or released) sequence got past the head
   * acknowledged when streaming began, by its last stats before the strike, and over how many ms:
   * what its inbound leg carried (the same window as the write rate).
   */
  readonly carried: Record<string, Record<string, { readonly seqs: number; readonly ms: number }>>;
  readonly elapsedSec: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Bounds that only end a hung step; they measure nothing. */
const SETTLE_TIMEOUT_MS = 30_000;
const STATUS_WAIT_MS = 3_000;
const FETCH_TIMEOUT_MS = 30_000;

/** [first, last, wall ms] of every admission at each holder, by volume then holder, from the run's span files. */
function admissionsFromSpans(runDir: string): Map<string, Map<string, [number, number, number][]>> {
  const out = new Map<string, Map<string, [number, number, number][]>>();
  for (const s of readRunSpans(runDir)) {
    // Only the admission that stored a unit is its capture (a re-send's admit names the range too).
    const range = seqRange(s);
    if (s.name !== "holder.admit" || range === undefined || admitOutcome(s) !== "stored") continue;
    const v = String(s.attributes["custody.volume"]);
    const h = String(s.resource["custody.actor"]);
    const byHolder = out.get(v) ?? new Map<string, [number, number, number][]>();
    out.set(v, byHolder);
    byHolder.set(h, [...(byHolder.get(h) ?? []), [range[0], range[1], startMs(s)]]);
  }
  return out;
}

/**
 * What the demo samples every half second while it runs: the first volume's timeline, each
 * holder's latest stats and (while streaming) how far it reached, and the live status block.
 */
class StreamSampler {
  phase = "streaming";
  struckRegions = new Set<string>();
  readonly samples: TimelineSample[] = [];
  readonly latest = new Map<string, HolderStats>();
  readonly tStream = Date.now();
  /** Each holder's highest retained or released sequence per volume, last seen while streaming. */
  readonly #reach = new Map<string, Map<string, { tMs: number; seq: number }>>();
  /** A writer writes from the moment it serves: the rate counts what was acknowledged since all serve. */
  readonly #atStart: Map<string, number>;
  /** What each leg carried is counted over the same window as the write rate: from the head acknowledged now. */
  readonly #headAtStart: Map<string, number>;
  readonly #siteBytes = new Map<string, number>();
  readonly #volumes: string[];
  #running = true;
  readonly #loop: Promise<void>;

  constructor(
    private readonly view: OperatorView,
    private readonly d: Deployment,
    private readonly acksOf: (v: string) => AckedWrite[],
    private readonly t0: number,
    private readonly progress: (lines: string[]) => void,
  ) {
    this.#volumes = volumesOf(d);
    this.#atStart = new Map(this.#volumes.map((v) => [v, acksOf(v).length]));
    this.#headAtStart = new Map(this.#volumes.map((v) => [v, headOf(acksOf(v))]));
    this.#loop = (async () => {
      while (this.#running) {
        await this.#sample().catch(() => undefined);
        await sleep(500);
      }
    })();
  }

  /** Writes of `v` acknowledged since streaming began, of `n` in its log. */
  sinceStart(v: string, n: number): number {
    return n - (this.#atStart.get(v) ?? 0);
  }

  /** Ends the sampling once its current round is done. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }

  /** Volume → holder → how far it got past the head acknowledged when streaming began, and over how many ms. */
  carried(): RunResult["carried"] {
    return Object.fromEntries(
      this.#volumes.map((v) => [
        v,
        Object.fromEntries(
          [...(this.#reach.get(v) ?? [])].map(([h, r]) => [
            h,
            { seqs: Math.max(0, r.seq - this.#headAtStart.get(v)!), ms: r.tMs - this.tStream },
          ]),
        ),
      ]),
    );
  }

  async #sample(): Promise<void> {
    const volumes = this.#volumes;
    const stats = await this.view.holders(volumes);
    if (this.phase === "streaming") this.#noteReach(stats);
    const holders: Record<string, { retained: [number, number][]; bytes: number }> = {};
    for (const [h, s] of stats) {
      this.latest.set(h, s);
      holders[h] = s.volumes[this.d.volume]!;
    }
    const acks = volumes.map(this.acksOf);
    this.samples.push({ tMs: Date.now() - this.t0, holders, acked: headOf(acks[0]!) });
    this.#noteSiteBytes(stats);
    this.progress(this.#statusBlock(acks));
  }

  #noteReach(stats: Map<string, HolderStats>): void {
    for (const [h, s] of stats)
      for (const v of this.#volumes) {
        const seq = s.volumes[v]?.reach ?? 0;
        if (seq === 0) continue;
        const byHolder = this.#reach.get(v) ?? new Map<string, { tMs: number; seq: number }>();
        this.#reach.set(v, byHolder);
        byHolder.set(h, { tMs: Date.now(), seq });
      }
  }

  /** The last answer stays until the next one (a holder busy past one stats round is not gone). */
  #noteSiteBytes(stats: Map<string, HolderStats>): void {
    const siteOf = new Map(this.d.holders.map((h) => [h.id, h.site]));
    const answered = new Map<string, number>();
    for (const [h, s] of stats)
      for (const v of Object.values(s.volumes))
        answered.set(siteOf.get(h)!, (answered.get(siteOf.get(h)!) ?? 0) + v.bytes);
    for (const [site, bytes] of answered) this.#siteBytes.set(site, bytes);
  }

  /** Sites in custody, in the deployment's order; a struck site says so. */
  #statusBlock(acks: AckedWrite[][]): string[] {
    const volumes = this.#volumes;
    const seqBytes = this.d.workload.blocksPerWrite * 4096;
    const streamed = volumes.reduce((n, v, i) => n + this.sinceStart(v, acks[i]!.length), 0);
    const secs = (Date.now() - this.tStream) / 1000;
    const custodySites = [...new Set(this.d.holders.map((h) => h.site))];
    const regionOfSite = new Map(this.d.sites.map((s) => [s.id, s.region]));
    return formatProgress({
      seconds: (Date.now() - this.t0) / 1000,
      phase: this.phase,
      mbPerSec: (streamed * seqBytes) / 1e6 / Math.max(secs, 0.001),
      volumes: volumes.map((v, i) => ({
        volume: v,
        writes: acks[i]!.length,
        acked: headOf(acks[i]!),
        receiptedCut: this.view.status(v)?.survivingCut?.[0]?.[1] ?? null,
      })),
      sites: custodySites.map((site) => ({
        site,
        bytes: this.struckRegions.has(regionOfSite.get(site)!) ? "struck" : (this.#siteBytes.get(site) ?? null),
      })),
    });
  }
}

const headOf = (acks: readonly AckedWrite[]) => acks.reduce((m, a) => Math.max(m, a.seq), 0);

/**
 * Recovers volume `v` at the destination from every unit the survivors on its path return (fetched
 * over NATS, as custody recover does), and compares it byte for byte with what its writer
 * acknowledged (`mine`). Links the writer's own volume into the run folder beside it.
 */
async function recoverAtDestination(
  view: OperatorView,
  net: RunningNetwork,
  v: string,
  survivors: readonly string[],
  mine: readonly AckedWrite[],
): Promise<{ res: Awaited<ReturnType<typeof recoverVolume>>; recoverySec: number; byteExact: boolean }> {
  const d = net.deployment;
  const t = Date.now();
  const onPath = new Set(deploymentOfVolume(d, v).holders.map((h) => h.id));
  const units: TransportUnit[] = [];
  for (const h of survivors.filter((x) => onPath.has(x)))
    units.push(
      ...(await fetchUnits(view.transport, h, v, d.lane, RangeSet.of(0, Number.MAX_SAFE_INTEGER), FETCH_TIMEOUT_MS)),
    );
  const dir = join(net.runDir, "recovered", v);
  const writerInstance = net.roles.get(`writer-${writerIdOf(d, v)}`)!;
  const dataKey = new Uint8Array(readFileSync(join(writerInstance.dir, "data.key")));
  const res = await recoverVolume({ volume: v, dir, blockCount: d.blocks, lanes: [d.lane], dataKey, units });
  const recoverySec = (Date.now() - t) / 1000;
  const vol = await SmartWalVolume.open(dir);
  const got = Buffer.from(await vol.read(0, d.blocks));
  await vol.close();
  const byteExact = got.equals(
    Buffer.from(
      workloadContentThrough(d.blocks, d.workload.blocksPerWrite, lsnOffset(mine, d.workload.blocksPerWrite), res.lsn),
    ),
  );
  // The writer's own volume, where the run folder's readers expect it.
  symlinkSync(join(net.runDir, "state", `writer-${writerIdOf(d, v)}`, "volume"), join(net.runDir, "writer", v));
  return { res, recoverySec, byteExact };
}

/**
 * Strikes both regions of the deployment's failures at once (SIGKILL) and records the strike span.
 * Returns the last evaluation before it (for comparison only: receipts are still in flight then).
 */
async function strikeBoth(registry: ProcessRegistry, net: RunningNetwork, view: OperatorView, sampler: StreamSampler) {
  const d = net.deployment;
  const before = new Map<string, VolumeStatus | undefined>(volumesOf(d).map((v) => [v, view.status(v)]));
  sampler.phase = `${d.failures.first} and ${d.failures.second} struck`;
  sampler.struckRegions = new Set([d.failures.first, d.failures.second]);
  const strikeAt = Date.now();
  const killed = await strikeRegions(registry, net, [d.failures.first, d.failures.second]);
  // Instances are `<role>-<actor id>` (custody init's naming), the id the role's spans carry.
  const actorOf = (instance: string) => instance.slice(net.roles.get(instance)!.role.length + 1);
  await recordStrikeSpan(net.runDir, {
    startMs: strikeAt,
    endMs: Date.now(),
    signal: "SIGKILL",
    regions: [d.failures.first, d.failures.second],
    actors: killed.map(actorOf),
    processes: killed,
  });
  return { before, strikeAt, killed };
}

/**
 * Waits until the survivors are settled, then reads each volume's prediction from a status document
 * evaluated since. Throws CustodyError no_status when the first volume's controller sends none.
 */
async function predictFromSurvivors(view: OperatorView, d: Deployment, survivors: readonly string[], strikeAt: number) {
  const volumes = volumesOf(d);
  const controllerOf = (v: string) => controllerIdOf(d, v);
  const settled = await settledSurvivors(view, survivors, volumes, controllerOf, SETTLE_TIMEOUT_MS);
  const settleMs = Date.now() - strikeAt;
  const predicted = new Map<string, VolumeStatus | undefined>();
  for (const v of volumes) predicted.set(v, await view.statusSince(v, settled.sinceMs, STATUS_WAIT_MS));
  const firstStatus = predicted.get(d.volume);
  if (firstStatus === undefined)
    throw new CustodyError(
      "no_status",
      `no status document of ${d.volume} from its controller ${controllerOf(d.volume)}`,
      { volume: d.volume },
    );
  return { settled, settleMs, predicted, firstStatus };
}

type ScenarioStatus = VolumeStatus["scenarios"][number];

/** Volume `v`'s outcome: acknowledged, predicted (`sc`), cut at the strike (`atStrike`) and recovered. */
function volumeOutcome(
  d: Deployment,
  v: string,
  acknowledged: number,
  sc: ScenarioStatus | undefined,
  atStrike: ScenarioStatus | undefined,
  r: { res: Awaited<ReturnType<typeof recoverVolume>>; recoverySec: number; byteExact: boolean },
): VolumeOutcome {
  const recoveredCut = r.res.cut[d.lane] ?? 0;
  const cmp = d.waypointComparison;
  return {
    volume: v,
    path: cmp?.volume === v ? `without ${cmp.holder}` : cmp !== undefined ? `with ${cmp.holder}` : "as deployed",
    acknowledged,
    predictedCut: sc?.cut?.[0]?.[1] ?? null,
    cutAtStrike: atStrike?.cut?.[0]?.[1] ?? null,
    recoveredCut,
    recoveredLsn: r.res.lsn,
    lostSeqs: Math.max(0, acknowledged - recoveredCut),
    byteExact: r.byteExact,
    contributors: sc?.contributors ?? [],
    recoverySec: r.recoverySec,
  };
}

/** When each holder admitted each unit of the first volume (its capture lag), from its spans. */
function addCaptures(latest: Map<string, HolderStats>, runDir: string, volume: string): void {
  const admissions = admissionsFromSpans(runDir);
  for (const [h, captured] of admissions.get(volume) ?? []) {
    const s = latest.get(h);
    if (s !== undefined) latest.set(h, { ...s, captured });
  }
}

/** Options of `strikeRun`. */
export interface StrikeRunOptions {
  readonly deploymentPath: string;
  readonly runDir: string;
  readonly seconds: number;
  readonly t0: number;
  readonly secured?: boolean;
  readonly print: (l: string) => void;
  readonly progress: (lines: string[]) => void;
  readonly onLaunched: () => void;
}

/** The event line saying what was launched and how long it took since `tRun`. */
function launchedLine(net: RunningNetwork, tRun: number): string {
  const counts = (role: string) => [...net.roles.values()].filter((r) => r.role === role).length;
  return (
    `custody init + bootstrap, then custody run for ${counts("controller")} controllers, ` +
    `${counts("holder")} holders and ${counts("writer")} writers ` +
    `on ${Object.keys(net.regions).length} nats-servers in ${((Date.now() - tRun) / 1000).toFixed(1)} s`
  );
}

/**
 * Recovers every volume at the destination (see recoverAtDestination) and tells each outcome as an
 * event, against what `expected` says of the volume: acknowledged, predicted, cut at the strike.
 */
async function recoverAll(
  view: OperatorView,
  net: RunningNetwork,
  survivors: readonly string[],
  acks: ReadonlyMap<string, AckedWrite[]>,
  event: (label: string) => void,
  expected: (v: string) => {
    acknowledged: number;
    predicted: ScenarioStatus | undefined;
    atStrike: ScenarioStatus | undefined;
  },
): Promise<VolumeOutcome[]> {
  const d = net.deployment;
  const volumes = volumesOf(d);
  const outcomes: VolumeOutcome[] = [];
  mkdirSync(join(net.runDir, "recovered"), { recursive: true });
  mkdirSync(join(net.runDir, "writer"), { recursive: true });
  for (const v of volumes) {
    const { res, recoverySec, byteExact } = await recoverAtDestination(view, net, v, survivors, acks.get(v)!);
    const { acknowledged, predicted: sc, atStrike } = expected(v);
    const recoveredCut = res.cut[d.lane] ?? 0;
    outcomes.push(volumeOutcome(d, v, acknowledged, sc, atStrike, { res, recoverySec, byteExact }));
    event(
      `${v} recovered at ${d.recoverAt} through #${recoveredCut} (predicted #${sc?.cut?.[0]?.[1] ?? "nothing"}), ` +
        `acknowledged #${acknowledged}: lost ${Math.max(0, acknowledged - recoveredCut)} seqs, ` +
        (byteExact ? "byte-exact" : "NOT byte-exact"),
    );
  }
  return outcomes;
}

/** What the writers had acknowledged at the strike, and at what rate since streaming began. */
function acknowledgedAt(
  strikeAt: number,
  volumes: readonly string[],
  acksOf: (v: string) => AckedWrite[],
  sampler: StreamSampler,
  seqBytes: number,
) {
  const writeSec = (strikeAt - sampler.tStream) / 1000;
  const acks = new Map(volumes.map((v) => [v, acksOf(v)]));
  const head = new Map(volumes.map((v) => [v, headOf(acks.get(v)!)]));
  const writes = [...acks.values()].reduce((n, a) => n + a.length, 0);
  const rateOf = (v: string) =>
    (sampler.sinceStart(v, acks.get(v)!.length) * seqBytes) / 1e6 / Math.max(writeSec, 0.001);
  const written = {
    writes,
    writeMBps: volumes.reduce((n, v) => n + rateOf(v), 0),
    writeMBpsByVolume: Object.fromEntries(volumes.map((v) => [v, rateOf(v)])),
    streamSec: writeSec,
  };
  return { acks, head, written };
}

/** The holders outside the struck regions. */
function survivorsOf(d: Deployment, struck: ReadonlySet<string>): string[] {
  const regionOfSite = new Map(d.sites.map((s) => [s.id, s.region]));
  return d.holders.filter((h) => !struck.has(regionOfSite.get(h.site)!)).map((h) => h.id);
}

/**
 * Ends the run: stops sampling and the operator's view, SIGTERMs the survivors (each custody run
 * flushes its spans and exits 0), then reads the first volume's captures from those spans.
 */
async function finishStreaming(
  sampler: StreamSampler,
  view: OperatorView,
  registry: ProcessRegistry,
  runDir: string,
  volume: string,
): Promise<void> {
  sampler.phase = "done";
  await sampler.stop();
  await view.close();
  await registry.stopAll();
  addCaptures(sampler.latest, runDir, volume);
}

/** The event line of the writers' stream. */
function streamingLine(d: Deployment): string {
  const volumes = volumesOf(d);
  return (
    `streaming ${volumes.length} volumes (${volumes.join(", ")}) at ${d.workload.writesPerSec} writes/s each, ` +
    `${d.workload.blocksPerWrite * 4} KiB per write (each writer's own workload)`
  );
}

/** The event line of the strike: what it killed and what was acknowledged by then. */
function strikeLine(d: Deployment, killed: readonly string[], writes: number, head: ReadonlyMap<string, number>) {
  return (
    `STRIKE mid-stream: SIGKILL ${killed.join(", ")} ` +
    `and the nats-servers of ${d.failures.first} and ${d.failures.second} at once; ` +
    `${writes} writes acknowledged (${volumesOf(d)
      .map((v) => `${v} #${head.get(v)}`)
      .join(", ")})`
  );
}

/** The event line of the settled survivors and the prediction from their receipts. */
function settledLine(
  survivors: readonly string[],
  settleMs: number,
  volumes: readonly string[],
  predictedOf: (v: string) => ScenarioStatus | undefined,
): string {
  const predictedCuts = volumes.map((v) => `${v} #${predictedOf(v)?.cut?.[0]?.[1] ?? "nothing"}`);
  return (
    `survivors ${survivors.join(" + ")} settled ${settleMs} ms after the strike; ` +
    `prediction from their receipts: ${predictedCuts.join(", ")}`
  );
}

/**
 * Runs `deploymentPath` into `runDir`, lets the writers stream for `seconds`, then strikes. Stops its
 * processes through the registry before returning.
 */
export async function strikeRun(registry: ProcessRegistry, opts: StrikeRunOptions): Promise<RunResult> {
  const { print, progress, t0 } = opts;
  const tRun = Date.now();
  // Starting takes a while (init, servers, every role process): say each step on the demo's clock.
  const step = (label: string) => print(`  ${clock((Date.now() - t0) / 1000)}${label}`);
  const net = await launchNetwork(registry, opts.deploymentPath, opts.runDir, opts.secured ?? true, step);
  opts.onLaunched();
  const d = net.deployment;
  const volumes = volumesOf(d);
  const names = scenarioNames(d);
  const seqBytes = d.workload.blocksPerWrite * 4096;
  const events: DemoEvent[] = [];
  const event = (label: string) => {
    events.push({ tMs: Date.now() - t0, label });
    print(`  ${clock((Date.now() - t0) / 1000)}${label}`);
  };
  event(launchedLine(net, tRun));
  step("connecting as the operator to read the holders' stats and the controllers' status documents…");
  const view = await OperatorView.open(net.operatorNats, volumes, d.lane, seqBytes);
  try {
    // What the application saw acknowledged: each writer's acknowledgement log (appended after each sync).
    const acksOf = (v: string) => readVolumeAckLog(ackLogOf(net.runDir, v), v);

    const sampler = new StreamSampler(view, d, acksOf, t0, progress);

    event(streamingLine(d));
    await sleep(opts.seconds * 1000);

    const { before, strikeAt, killed } = await strikeBoth(registry, net, view, sampler);
    const { acks, head, written } = acknowledgedAt(strikeAt, volumes, acksOf, sampler, seqBytes);
    event(strikeLine(d, killed, written.writes, head));

    // Survivors account for everything that reached them: every unit they hold covered by a
    // receipt the controller verified, read twice alike. Then the prediction, from a status
    // document evaluated since.
    const survivors = survivorsOf(d, sampler.struckRegions);
    const { settled, settleMs, predicted, firstStatus } = await predictFromSurvivors(view, d, survivors, strikeAt);
    const scenarioOf = (doc: VolumeStatus | undefined) => doc?.scenarios.find((s) => s.name === names.both);
    event(settledLine(survivors, settleMs, volumes, (v) => scenarioOf(predicted.get(v))));

    // Recover every volume at the destination from every unit the survivors on its path return
    // (fetched over NATS, as custody recover does), not only up to the prediction: the observed
    // cut is what the units themselves reach.
    sampler.phase = `recovering at ${d.recoverAt}`;
    const outcomes = await recoverAll(view, net, survivors, acks, event, (v) => ({
      acknowledged: head.get(v)!,
      predicted: scenarioOf(predicted.get(v)),
      atStrike: scenarioOf(before.get(v)),
    }));
    await finishStreaming(sampler, view, registry, net.runDir, d.volume);
    return {
      deployment: d,
      runDir: net.runDir,
      scenario: names.both,
      samples: sampler.samples,
      events,
      strikeMs: strikeAt - t0,
      settleMs,
      outcomes,
      status: firstStatus,
      survivorRanges: settled.ranges,
      ...written,
      latest: sampler.latest,
      carried: sampler.carried(),
      elapsedSec: (Date.now() - tRun) / 1000,
    };
  } finally {
    await view.close().catch(() => undefined);
  }
}
