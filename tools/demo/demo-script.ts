/**
 * The demo's script, end to end on real processes: run the deployment under a sustained write
 * load on every volume and strike two regions mid-stream (strike-run.ts). One volume's custody
 * path leaves the waypoint out, so the same strike shows side by side what the waypoint saves.
 * Every volume's recovered cut must equal the prediction the controller made from the survivors'
 * receipts. Everything the report and the tables need comes back in one DemoResult.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadDeployment, edgeBetween, type Deployment } from "./deployment.ts";
import { makeRunDir } from "./network-launcher.ts";
import { ProcessRegistry } from "./process-registry.ts";
import { savedResult } from "./report-input.ts";
import { legRow, type LegRow } from "./scenario-table.ts";
import { strikeRun, type RunResult } from "./strike-run.ts";
import { deploymentOfVolume } from "./waypoint-variant.ts";
import type { DemoResult, ScenarioOutcome } from "./demo-result.ts";

export type { DemoResult, ScenarioOutcome } from "./demo-result.ts";

/** Options of `runDemo`. */
export interface DemoOptions {
  readonly deploymentPath: string;
  /** Shorter streams (the test mode). */
  readonly short?: boolean;
  /** Parent of the `runs/<timestamp>` folder (default: `<repo>/runs`). */
  readonly runRoot?: string;
  /** Where lines go (default stdout). `progress` lines rewrite one terminal line when `tty`. */
  readonly print?: (line: string) => void;
  /** The live status block (see progress-line.ts), replaced on each sample. */
  readonly progress?: (lines: string[]) => void;
}

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Runs the whole demo; always stops every process it started (also when it throws). */
export async function runDemo(opts: DemoOptions): Promise<DemoResult> {
  const print = opts.print ?? ((l: string) => console.log(l));
  const progress = opts.progress ?? ((lines: string[]) => lines.forEach(print));
  const registry = new ProcessRegistry();
  const runDir = makeRunDir(opts.runRoot);
  const uninstall = registry.installSignalHandlers(() =>
    console.error(`\ninterrupted: every process stopped; run folder ${runDir}`),
  );
  const t0 = Date.now();
  // For operators (and the interrupt test): what this run started, before anything can go wrong.
  const savePids = () => writeFileSync(join(runDir, "pids.json"), JSON.stringify(registry.startedPids));
  try {
    print(`run folder: ${runDir}`);
    const d = loadDeployment(opts.deploymentPath);
    const run = await strikeRun(registry, {
      deploymentPath: opts.deploymentPath,
      runDir,
      seconds: opts.short ? d.workload.shortSeconds : d.workload.seconds,
      t0,
      print,
      progress,
      onLaunched: savePids,
    });
    await registry.stopAll();
    return summarize(d, runDir, run, registry, t0);
  } finally {
    await registry.stopAll();
    uninstall();
  }
}

/**
 * Every custody leg of every volume, priced at the rate it carried while the writers streamed: how
 * far its receiving holder's highest retained or released sequence of that volume advanced, per second. A
 * holder fed by several senders of one volume gets one row naming all of them.
 */
export function measuredLegs(d: Deployment, run: Pick<RunResult, "outcomes" | "carried">): LegRow[] {
  const seqBytes = d.workload.blocksPerWrite * 4096;
  const legs: LegRow[] = [];
  for (const v of run.outcomes.map((o) => o.volume)) {
    const dv = deploymentOfVolume(d, v);
    const siteOf = (id: string) => (id === dv.writer.id ? dv.writer.site : dv.holders.find((h) => h.id === id)!.site);
    for (const h of dv.holders) {
      const senders = [
        ...(dv.writer.holders.includes(h.id) ? [dv.writer.id] : []),
        ...dv.holders.filter((x) => x.downstream.includes(h.id)).map((x) => x.id),
      ];
      if (senders.length === 0) continue;
      const c = run.carried[v]?.[h.id];
      const rate = c === undefined || c.ms <= 0 ? 0 : (c.seqs * seqBytes) / (c.ms / 1000);
      const from = [...new Set(senders.map(siteOf))].join(", ");
      legs.push(
        legRow(from, h.site, edgeBetween(d, siteOf(senders[0]!), h.site)?.pricePerGb ?? 0, rate, {
          volume: v,
          senders,
          receiver: h.id,
        }),
      );
    }
  }
  return legs;
}

function summarize(d: Deployment, runDir: string, run: RunResult, registry: ProcessRegistry, t0: number): DemoResult {
  const scenarios: ScenarioOutcome[] = run.outcomes.map((o) => ({
    name: `${run.scenario}: ${o.volume} ${o.path}`,
    volume: o.volume,
    path: o.path,
    acknowledged: o.acknowledged,
    predicted_cut: o.predictedCut,
    recovered_cut: o.recoveredCut,
    recovered_lsn: o.recoveredLsn,
    lost_seqs: o.lostSeqs,
    predicted_lost_seqs: Math.max(0, o.acknowledged - (o.predictedCut ?? 0)),
    cut_at_strike: o.cutAtStrike,
    byte_exact: o.byteExact,
  }));
  const cmp = d.waypointComparison;
  const lossOf = (v: string) => run.outcomes.find((o) => o.volume === v)?.lostSeqs ?? 0;
  // Capture lag: how long after a unit's first capture anywhere each holder captured it.
  const firstCapture = new Map<number, number>();
  for (const s of run.latest.values())
    for (const [f, , at] of s.captured) firstCapture.set(f, Math.min(firstCapture.get(f) ?? Infinity, at));
  const captureLagMs: Record<string, number | null> = {};
  for (const [h, s] of run.latest)
    captureLagMs[h] = s.captured.length === 0 ? null : median(s.captured.map(([f, , at]) => at - firstCapture.get(f)!));
  const legs = measuredLegs(d, run);
  const out: DemoResult = {
    runDir,
    deployment: d,
    run,
    scenarios,
    mismatches: scenarios.filter((s) => s.predicted_cut !== s.recovered_cut).length,
    losingScenarios: scenarios.filter((s) => s.lost_seqs > 0).length,
    waypointLoss: cmp === undefined ? null : { withWaypoint: lossOf(d.volume), withoutWaypoint: lossOf(cmp.volume) },
    legs,
    captureLagMs,
    startedPids: [...registry.startedPids],
    leftPids: registry.livePids(),
    elapsedSec: (Date.now() - t0) / 1000,
  };
  writeFileSync(join(runDir, "result.json"), savedResult(out));
  return out;
}
