/**
 * `npm run demo` — the multi-region custody demo:
 *   node --import tsx tools/demo/run-demo.ts [--deployment examples/deployment.json] [--short] [--json]
 * Prints a live progress line and the timeline, then the strike table (predicted vs observed loss,
 * with and without the waypoint), the scenario and cost tables; writes `report.html` into the run
 * folder; stops every process it started (also on Ctrl-C). Exit 1 when a recovered cut differs
 * from its prediction, a recovered volume is not byte-exact, or a process is left running.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { repoRoot } from "../../test/kit/index.ts";
import { captureLagRows, carriedInto, formatLag } from "./capture-lag.ts";
import { runDemo } from "./demo-script.ts";
import { LiveBlock } from "./live-block.ts";
import { checkNatsServer } from "./nats-launcher.ts";
import { renderReport } from "./report-html.ts";
import { formatCostTable, formatScenarioTable, formatStrikeTable } from "./scenario-table.ts";
import { statusRows } from "./status-rows.ts";

// Found by walking up (not `..` from this file), so the demo also runs from a bundle.
const repo = repoRoot();
const { values } = parseArgs({
  options: {
    deployment: { type: "string", default: join(repo, "examples", "deployment.json") },
    short: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    runs: { type: "string" },
  },
});

try {
  console.log(`nats-server: ${checkNatsServer()}`);
  // The role processes are started with this process's own binary (process.execPath), so they run on it too.
  console.log(`node: ${process.version} (${process.execPath})`);
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
const tty = process.stdout.isTTY === true && !values.json;
const out = new LiveBlock((text) => process.stdout.write(text), tty);
const result = await runDemo({
  deploymentPath: resolve(values.deployment!),
  short: values.short,
  runRoot: values.runs === undefined ? undefined : resolve(values.runs),
  print: (l) => out.print(l),
  progress: (lines) => out.show(lines),
});
out.clear();
const reportPath = join(result.runDir, "report.html");
writeFileSync(reportPath, renderReport(result));
console.log("");
const first = result.run;
console.log(`the strike '${first.scenario}', per volume: predicted from the survivors' receipts vs recovered`);
console.log(
  formatStrikeTable(
    first.outcomes.map((o) => ({
      run: o.path,
      volume: o.volume,
      acknowledged: o.acknowledged,
      predictedCut: o.predictedCut,
      recoveredCut: o.recoveredCut,
      cutAtStrike: o.cutAtStrike,
    })),
  ),
);
console.log("");
console.log(`every scenario of ${first.deployment.volume}, evaluated from the survivors' receipts after the strike:`);
console.log(formatScenarioTable(statusRows(first)));
console.log("");
console.log(formatCostTable(result.legs));
console.log("");
console.log(
  `write load: ${first.writes} writes on ${first.outcomes.length} volumes before the strike, ` +
    `${first.writeMBps.toFixed(2)} MB/s acknowledged in total (` +
    Object.entries(first.writeMBpsByVolume)
      .map(([v, r]) => `${v} ${r.toFixed(2)}`)
      .join(", ") +
    ")",
);
console.log(
  `capture lag of ${first.deployment.volume} (median time after a unit's first copy until each holder has it):`,
);
for (const row of captureLagRows(
  first.deployment,
  result.captureLagMs,
  (first.writeMBpsByVolume[first.deployment.volume] ?? 0) * 1e6,
  carriedInto(result.legs, first.deployment.volume),
))
  console.log(`  ${row.holder.padEnd(8)} ${formatLag(row.ms).padStart(7)}  ${row.why}`);
if (result.waypointLoss !== null) {
  const w = result.waypointLoss;
  console.log(
    `the waypoint's worth: ${w.withWaypoint} acknowledged seqs lost with it, ${w.withoutWaypoint} without it ` +
      `(same strike, same write stream, at the same time; the second volume's custody path leaves the waypoint out)`,
  );
}
const byteExact = result.scenarios.every((s) => s.byte_exact);
console.log(
  `${result.scenarios.length} strike outcomes: ${result.losingScenarios} lost acknowledged writes, ` +
    `${result.mismatches} differ from the prediction; ` +
    `every recovered volume ${byteExact ? "byte-exact" : "NOT byte-exact"} vs the writes`,
);
console.log(
  `processes started ${result.startedPids.length}, left running ${result.leftPids.length}; ` +
    `${result.elapsedSec.toFixed(1)} s`,
);
console.log(`report: ${reportPath}`);
console.log(
  `trace a unit: npx custody trace ` +
    `${first.deployment.volume}:${Math.max(1, first.outcomes[0]!.recoveredCut - 1)} --run ${first.runDir}`,
);
// A lost write's trace ends with where its custody stopped and the strike that ended it.
const lost = first.outcomes.find((o) => o.lostSeqs > 0);
if (lost !== undefined)
  console.log(`trace a lost write: npx custody trace ${lost.volume}:${lost.recoveredCut + 1} --run ${first.runDir}`);
if (values.json) {
  console.log(
    JSON.stringify({
      scenarios: result.scenarios,
      losing_scenarios: result.losingScenarios,
      mismatches: result.mismatches,
      waypoint_loss:
        result.waypointLoss === null
          ? null
          : { with_waypoint: result.waypointLoss.withWaypoint, without_waypoint: result.waypointLoss.withoutWaypoint },
      byte_exact: byteExact,
      seconds: Number(result.elapsedSec.toFixed(1)),
      runDir: result.runDir,
      write_mb_per_sec: Number(first.writeMBps.toFixed(2)),
      write_mb_per_sec_by_volume: Object.fromEntries(
        Object.entries(first.writeMBpsByVolume).map(([v, r]) => [v, Number(r.toFixed(2))]),
      ),
      writes: first.writes,
      settle_ms: first.settleMs,
      startedPids: result.startedPids,
      leftPids: result.leftPids,
      report: reportPath,
      node: process.version,
    }),
  );
}
process.exit(result.mismatches === 0 && byteExact && result.leftPids.length === 0 ? 0 : 1);
