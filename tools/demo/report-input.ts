/**
 * What report.html is drawn from: a demo's result without its live handles, as the demo saves it
 * in the run folder (`result.json`). Reading it back lets a report be drawn again, and checked,
 * without running the demo.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CustodyError } from "../../core/index.ts";
import type { DemoResult } from "./demo-result.ts";
import type { RunResult } from "./strike-run.ts";

/** A demo result as saved: everything but the run's live holder stats. */
export type ReportInput = Omit<DemoResult, "run"> & { readonly run: Omit<RunResult, "latest"> };

/** Thrown when a run folder's `result.json` is missing, not JSON, or lacks what the report needs. */
export class RunResultError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("run_result_invalid", message, detail);
  }
}

/** The saved form of `r` (what `readRunResult` reads back). */
export function savedResult(r: DemoResult): string {
  return JSON.stringify({ ...r, run: { ...r.run, latest: undefined } });
}

const REQUIRED = [
  "runDir",
  "deployment",
  "run",
  "scenarios",
  "legs",
  "captureLagMs",
  "startedPids",
  "leftPids",
  "elapsedSec",
] as const;
const REQUIRED_RUN = [
  "scenario",
  "samples",
  "events",
  "strikeMs",
  "outcomes",
  "status",
  "survivorRanges",
  "writes",
  "writeMBps",
  "writeMBpsByVolume",
  "streamSec",
  "carried",
] as const;

/** Reads `<runDir>/result.json`. Throws RunResultError naming the file and the first missing field. */
export function readRunResult(runDir: string): ReportInput {
  const file = join(runDir, "result.json");
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new RunResultError(`${file}: ${(err as Error).message}`, { file });
  }
  const obj = parsed as Record<string, unknown>;
  const missing =
    REQUIRED.find((k) => obj?.[k] === undefined) ??
    REQUIRED_RUN.map((k) => `run.${k}`).find((k) => (obj.run as Record<string, unknown>)[k.slice(4)] === undefined);
  if (missing !== undefined)
    throw new RunResultError(`${file}: no '${missing}' (written by an older demo?)`, { file, missing });
  return parsed as ReportInput;
}
