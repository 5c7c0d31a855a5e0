import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { cliIo } from "../cli-io.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import {
  buildTraceTree,
  pathOf,
  readRunSpans,
  traceRows,
  TraceQueryError,
  unitFate,
  type PathHolder,
  type JsonlSpanRecord,
  type TraceTree,
} from "../../actors/runtime/telemetry/index.ts";

interface TraceOptions extends OutputOptions {
  run?: string;
}

/** The newest `runs/<timestamp>` folder under the working directory; throws TraceQueryError when there is none. */
function newestRun(): string {
  const root = resolve("runs");
  const runs = existsSync(root)
    ? readdirSync(root)
        .filter((d) => existsSync(join(root, d, "spans")))
        .sort()
    : [];
  const last = runs[runs.length - 1];
  if (last === undefined)
    throw new TraceQueryError("no run folder with spans under ./runs (run `npm run demo` first, or pass --run <dir>)", {
      root,
    });
  return join(root, last);
}

/** Site → region from the run's copy of the deployment file (empty when absent). */
function regionsOf(runDir: string): Record<string, string> {
  try {
    const d = JSON.parse(readFileSync(join(runDir, "deployment.json"), "utf8")) as {
      sites?: { id: string; region: string }[];
    };
    return Object.fromEntries((d.sites ?? []).map((s) => [s.id, s.region]));
  } catch {
    return {};
  }
}

/**
 * The holders serving the traced unit's volume and lane, from the run's custody deployment file (empty
 * when absent).
 */
function unitPath(runDir: string, tree: TraceTree, spans: readonly JsonlSpanRecord[]): PathHolder[] {
  const volume = tree.selector.split(":")[0]!;
  const write = spans.find((s) => s.name === "writer.write" && tree.traceIds.includes(s.traceId));
  const lane = write?.attributes["custody.lane"];
  if (typeof lane !== "string") return [];
  try {
    return pathOf(JSON.parse(readFileSync(join(runDir, "custody-deployment.json"), "utf8")), volume, lane);
  } catch {
    return [];
  }
}

/** Registers `custody trace <receipt-id | volume:seq> [--run <dir>] [--json]`. */
export function register(program: Command): void {
  program
    .command("trace")
    .description(
      "rebuild one unit's causal tree (write -> hops -> admits -> receipts -> release) from a run's span " +
        "files, and where its custody ended (last hop, the strike)",
    )
    .argument("<unit>", "<volume>:<seq>, or a receipt id (the 16-hex span id a previous trace printed)")
    .option("--run <dir>", "run folder (default: newest under ./runs)")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (unit: string, o: TraceOptions) => {
        const runDir = o.run === undefined ? newestRun() : resolve(o.run);
        const spans = readRunSpans(runDir);
        const tree = buildTraceTree(spans, unit, regionsOf(runDir));
        // A unit (not a receipt's batch) also gets where its custody ended.
        const fate = unit.includes(":") ? unitFate(tree, unitPath(runDir, tree, spans), spans) : undefined;
        printResult(
          o,
          { runDir, ...tree, ...(fate !== undefined ? { fate } : {}) },
          traceRows(tree),
          `${unit}: ${tree.hops} hops (${tree.crossRegionHops} cross-region), ${tree.receipts} receipts — run ` +
            `${runDir}`,
        );
        if (fate !== undefined && o.json !== true) cliIo().stdout(fate.lines.join("\n") + "\n");
      }),
    );
}
