/**
 * `npm run attack [-- --json] [-- --only REGEX]`: starts a secured network from `custody init` and
 * tries every attack in tools/attack/attacks.ts against it; prints one row per attack and, with
 * `--json`, one JSON object on the last line (`attacks_tried`, `attacks_refused`, `state_changed`,
 * `max_decode_ms`, `rows`). Exit code 1 when an attack was not refused or changed state.
 */
import { runAttacks } from "./run-attacks.ts";

const args = process.argv.slice(2);
const json = args.includes("--json");
const onlyAt = args.indexOf("--only");
const only = onlyAt >= 0 && args[onlyAt + 1] !== undefined ? new RegExp(args[onlyAt + 1]!) : undefined;

const report = await runAttacks({ ...(only ? { only } : {}), log: (l) => process.stderr.write(`${l}\n`) });
const width = Math.max(...report.rows.map((r) => r.attack.length));
console.log(`${"attack".padEnd(width)}  refused  state   serving  evidence`);
for (const r of report.rows) {
  console.log(
    `${r.attack.padEnd(width)}  ${(r.refused ? "yes" : "NO").padEnd(7)}  ` +
      (`${(r.changed.length ? "CHANGED" : "same").padEnd(6)}  ${(r.serving ? "yes" : "NO").padEnd(7)}  ` +
        `${r.evidence}${r.changed.length ? ` [${r.changed.join("; ")}]` : ""}`),
  );
}
console.log(
  `\nattacks tried ${report.attacks_tried}, refused ${report.attacks_refused}, state changed ` +
    `${report.state_changed}, slowest decode of a 1 MiB input ${report.max_decode_ms} ms`,
);
if (json) console.log(JSON.stringify(report));
process.exitCode = report.attacks_refused === report.attacks_tried && report.state_changed === 0 ? 0 : 1;
