/**
 * `npm run demo` — the multi-region custody demo:
 *   node --import tsx demo/run-demo.ts [--deployment examples/deployment.json] [--short] [--json]
 * Prints a live progress line and the timeline, then the per-scenario and cost tables; writes
 * `report.html` into the run folder; stops every process it started (also on Ctrl-C). Exit 1 when
 * the recovered cut differs from the prediction or the recovered volume is not byte-exact.
 */
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { runDemo } from "./demo-script.ts";
import { checkNatsServer } from "./nats-launcher.ts";
import { renderReport } from "./report-html.ts";
import { formatCostTable, formatScenarioTable } from "./scenario-table.ts";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
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
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
const tty = process.stdout.isTTY === true && !values.json;
const result = await runDemo({
  deploymentPath: resolve(values.deployment!),
  short: values.short,
  runRoot: values.runs === undefined ? undefined : resolve(values.runs),
  print: (l) => console.log(tty ? `\r\x1b[K${l}` : l),
  progress: (l) => (tty ? process.stdout.write(`\r\x1b[K${l}`) : console.log(l)),
});
const reportPath = join(result.runDir, "report.html");
writeFileSync(reportPath, renderReport(result));
console.log("");
console.log(formatScenarioTable(result.rows));
console.log("");
console.log(formatCostTable(result.legs));
console.log("");
console.log(`capture lag after the first copy (median ms): ${Object.entries(result.captureLagMs).map(([h, ms]) => `${h} ${ms.toFixed(1)}`).join(", ")}`);
const played = result.rows.filter((r) => r.observedCut !== undefined);
const cutOk = result.predictedBothCut === result.recovered.cut && played.every((r) => r.observedCut === r.predictedCut);
console.log(
  `${played.length} scenarios played: recovered cuts ${cutOk ? "equal" : "DIFFER FROM"} the predictions (${played.map((r) => `#${r.observedCut ?? "-"} vs #${r.predictedCut ?? "-"}`).join(", ")}); every recovered volume ${result.recovered.byteExact ? "byte-exact" : "NOT byte-exact"} vs the writer`,
);
console.log(`processes started ${result.startedPids.length}, left running ${result.leftPids.length}; ${result.elapsedSec.toFixed(1)} s`);
console.log(`report: ${reportPath}`);
console.log(`trace a unit: npx tsx cli/main.ts trace ${result.deployment.volume}:${result.recovered.cut} --run ${result.runDir}`);
if (values.json) {
  console.log(
    JSON.stringify({
      runDir: result.runDir,
      rows: result.rows,
      legs: result.legs,
      recovered: result.recovered,
      predictedCut: result.predictedBothCut,
      acknowledged: result.acknowledged,
      startedPids: result.startedPids,
      leftPids: result.leftPids,
      captureLagMs: result.captureLagMs,
      elapsedSec: result.elapsedSec,
      report: reportPath,
    }),
  );
}
process.exit(cutOk && result.recovered.byteExact && result.leftPids.length === 0 ? 0 : 1);
