/**
 * `npm run report -- <run folder>`: draws `report.html` again from the run folder's saved
 * `result.json` (no demo run needed), e.g. after the drawing changed.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { renderReport } from "./report-html.ts";
import { readRunResult } from "./report-input.ts";

const dir = process.argv[2];
if (dir === undefined) {
  console.error("usage: npm run report -- <run folder (runs/<timestamp>)>");
  process.exit(2);
}
try {
  const out = join(resolve(dir), "report.html");
  writeFileSync(out, renderReport(readRunResult(resolve(dir))));
  console.log(`report: ${out}`);
} catch (err) {
  const e = err as Error & { code?: string };
  console.error(`error [${e.code ?? "report_failed"}]: ${e.message}`);
  process.exit(1);
}
