/**
 * One run of a deployment under load, on real processes: start it, stream writes to every volume,
 * strike mid-stream (SIGKILL every process of two regions and their nats-servers in the same
 * instant), let the survivors account for what reached them, read the controller's prediction
 * from those receipts, recover every volume at the destination from the survivors' units, and
 * compare: the recovered cut must equal the predicted one exactly.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { recoverVolume } from "../actors/index.ts";
import type { VolumeStatus } from "../actors/index.ts";
import { RangeSet } from "../lanes/index.ts";
import type { TransportUnit } from "../lanes/index.ts";
import { SmartWalVolume } from "../volume/index.ts";
import type { TimelineSample } from "./custody-timeline.ts";
import { scenarioNames, volumesOf, type Deployment } from "./deployment.ts";
import { dataKeyOf } from "./key-material.ts";
import { launchNetwork, stopActors, strikeRegions } from "./network-launcher.ts";
import type { ProcessRegistry } from "./process-registry.ts";
import { formatProgress } from "./progress-line.ts";
import { settledSurvivors, type ControllerView, type HolderStats } from "./settle.ts";
import { contentThrough, lsnOffset, type AckedWrite } from "./workload.ts";

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
  readonly writeMBps: number;
  readonly latest: Map<string, HolderStats>;
  readonly elapsedSec: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs `deploymentPath` into `runDir` for `seconds` of writing, then strikes. Stops its actors (not the registry) before returning. */
export async function strikeRun(registry: ProcessRegistry, opts: { deploymentPath: string; runDir: string; seconds: number; t0: number; print: (l: string) => void; progress: (l: string) => void; onLaunched: () => void }): Promise<RunResult> {
  const { print, progress, t0 } = opts;
  const tRun = Date.now();
  const net = await launchNetwork(registry, opts.deploymentPath, opts.runDir);
  opts.onLaunched();
  const d = net.deployment;
  const volumes = volumesOf(d);
  const names = scenarioNames(d);
  const events: DemoEvent[] = [];
  const event = (label: string) => {
    events.push({ tMs: Date.now() - t0, label });
    print(`  ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s  ${label}`);
  };
  event(`started ${net.actors.size} actors and ${Object.keys(net.regions).length} nats-servers in ${((Date.now() - tRun) / 1000).toFixed(1)} s`);

  // Every acknowledgement the writer reports, as it happens; the IPC channel closes after the last one.
  const acks: AckedWrite[] = [];
  const head = new Map<string, number>(volumes.map((v) => [v, 0]));
  const writerChild = registry.get(d.writer.id)!.child;
  const writerClosed = new Promise<void>((r) => writerChild.once("close", () => r()));
  writerChild.on("message", (m: { ack?: AckedWrite }) => {
    if (m.ack === undefined) return;
    acks.push(m.ack);
    head.set(m.ack.volume, Math.max(head.get(m.ack.volume) ?? 0, m.ack.seq));
  });

  const samples: TimelineSample[] = [];
  const latest = new Map<string, HolderStats>();
  const siteOf = new Map(d.holders.map((h) => [h.id, h.site]));
  let phase = "streaming";
  let receiptedCut: number | null = null;
  const tStream = Date.now();
  const sample = async () => {
    const holders: Record<string, { retained: [number, number][]; bytes: number }> = {};
    await Promise.all(
      d.holders.map(async (h) => {
        const s = await net.actors.get(h.id)?.call<HolderStats>("stats", {}, 3000).catch(() => undefined);
        if (s === undefined) return;
        latest.set(h.id, s);
        holders[h.id] = s.volumes[d.volume]!;
      }),
    );
    const view = await net.actors.get(d.controller.id)?.call<ControllerView>("status", {}, 3000).catch(() => undefined);
    receiptedCut = view?.status?.survivingCut?.[0]?.[1] ?? receiptedCut;
    samples.push({ tMs: Date.now() - t0, holders, acked: head.get(d.volume)! });
    const custodyBytes: Record<string, number> = {};
    for (const [h, s] of latest) for (const v of Object.values(s.volumes)) custodyBytes[siteOf.get(h)!] = (custodyBytes[siteOf.get(h)!] ?? 0) + v.bytes;
    const secs = (Date.now() - tStream) / 1000;
    progress(formatProgress({ phase, writes: acks.length, acked: head.get(d.volume)!, custodyBytes, receiptedCut, seconds: secs, mbPerSec: (acks.length * d.workload.blocksPerWrite * 4096) / 1e6 / Math.max(secs, 0.001) }));
  };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sample().catch(() => undefined);
      await sleep(500);
    }
  })();

  // The stream is asked for longer than the strike waits: the strike always lands mid-stream.
  const writer = net.actors.get(d.writer.id)!;
  const stream = writer.call("stream", { seconds: opts.seconds + 60 }, (opts.seconds + 90) * 1000).catch(() => undefined);
  event(`streaming ${volumes.length} volumes (${volumes.join(", ")}) at ${d.workload.writesPerSec} writes/s each, ${d.workload.blocksPerWrite * 4} KiB per write`);
  await sleep(opts.seconds * 1000);

  // The last evaluation before the strike, for comparison only: receipts are still in flight.
  const before = new Map<string, ControllerView>();
  await Promise.all(volumes.map(async (v) => before.set(v, await net.actors.get(d.controller.id)!.call<ControllerView>("evaluate", { volume: v }))));
  phase = `${d.failures.first} and ${d.failures.second} struck`;
  const strikeAt = Date.now();
  const killed = await strikeRegions(registry, net, [d.failures.first, d.failures.second]);
  await writerClosed;
  await stream;
  const writeSec = (strikeAt - tStream) / 1000;
  event(`STRIKE mid-stream: SIGKILL ${killed.join(", ")} and the nats-servers of ${d.failures.first} and ${d.failures.second} at once; ${acks.length} writes acknowledged (${volumes.map((v) => `${v} #${head.get(v)}`).join(", ")})`);

  // Survivors account for everything that reached them: nothing left in flight between them and
  // every unit they hold covered by a receipt the controller verified. Then the prediction.
  const survivors = d.holders.filter((h) => net.actors.has(h.id)).map((h) => h.id);
  const settled = await settledSurvivors(net, survivors, volumes, 30_000);
  const settleMs = Date.now() - strikeAt;
  const predicted = new Map<string, ControllerView>();
  for (const v of volumes) predicted.set(v, await net.actors.get(d.controller.id)!.call<ControllerView>("evaluate", { volume: v }));
  const scenarioOf = (view: ControllerView | undefined) => view?.status?.scenarios.find((s) => s.name === names.both);
  event(`survivors ${survivors.join(" + ")} settled ${settleMs} ms after the strike; prediction from their receipts: ${volumes.map((v) => `${v} #${scenarioOf(predicted.get(v))?.cut?.[0]?.[1] ?? "nothing"}`).join(", ")}`);

  // Recover every volume at the destination from exactly the survivors' units.
  phase = `recovering at ${d.recoverAt}`;
  const outcomes: VolumeOutcome[] = [];
  for (const v of volumes) {
    const t = Date.now();
    const units = (await Promise.all(survivors.map((id) => net.actors.get(id)!.call<TransportUnit[]>("units", { volume: v }, 60_000)))).flat();
    const dir = join(net.runDir, "recovered", v);
    mkdirSync(join(net.runDir, "recovered"), { recursive: true });
    const res = await recoverVolume({ volume: v, dir, blockCount: d.blocks, lanes: [d.lane], dataKey: dataKeyOf(net.keys), units });
    const recoverySec = (Date.now() - t) / 1000;
    const vol = await SmartWalVolume.open(dir);
    const got = Buffer.from(await vol.read(0, d.blocks));
    await vol.close();
    const mine = acks.filter((a) => a.volume === v);
    const byteExact = got.equals(Buffer.from(contentThrough(v, d.blocks, d.workload.blocksPerWrite, lsnOffset(mine, d.workload.blocksPerWrite), res.lsn)));
    const sc = scenarioOf(predicted.get(v));
    const recoveredCut = res.cut[d.lane] ?? 0;
    const acknowledged = head.get(v)!;
    const cmp = d.waypointComparison;
    outcomes.push({
      volume: v,
      path: cmp?.volume === v ? `without ${cmp.holder}` : cmp !== undefined ? `with ${cmp.holder}` : "as deployed",
      acknowledged,
      predictedCut: sc?.cut?.[0]?.[1] ?? null,
      cutAtStrike: scenarioOf(before.get(v))?.cut?.[0]?.[1] ?? null,
      recoveredCut,
      recoveredLsn: res.lsn,
      lostSeqs: Math.max(0, acknowledged - recoveredCut),
      byteExact,
      contributors: sc?.contributors ?? [],
      recoverySec,
    });
    event(`${v} recovered at ${d.recoverAt} through #${recoveredCut} (predicted #${sc?.cut?.[0]?.[1] ?? "nothing"}), acknowledged #${acknowledged}: lost ${Math.max(0, acknowledged - recoveredCut)} seqs, ${byteExact ? "byte-exact" : "NOT byte-exact"}`);
  }
  phase = "done";
  sampling = false;
  await sampler;
  await stopActors(net);
  return {
    deployment: d,
    runDir: net.runDir,
    scenario: names.both,
    samples,
    events,
    strikeMs: strikeAt - t0,
    settleMs,
    outcomes,
    status: predicted.get(d.volume)!.status!,
    survivorRanges: settled,
    writes: acks.length,
    writeMBps: (acks.length * d.workload.blocksPerWrite * 4096) / 1e6 / Math.max(writeSec, 0.001),
    latest,
    elapsedSec: (Date.now() - tRun) / 1000,
  };
}
