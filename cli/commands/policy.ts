import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { action, consistentBy, contributorsText, printResult, type OutputOptions } from "../output.ts";
import { cliIo } from "../cli-io.ts";
import {
  evaluateState,
  parseEvaluationState,
  parsePlacementInput,
  placeCustody,
  PolicyInputError,
  withMeasuredEdges,
  type CustodyGraph,
  type EdgeSource,
  type EvaluationReport,
  type PlacementResult,
  type RouteMeasurement,
} from "../../policies/index.ts";
import { withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";
import { CustodyError } from "../../core/index.ts";

/** A positive integer option (typed error naming the option). */
function positiveInt(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new CustodyError("invalid_option", `--${name} must be a positive integer, got ${v}`, {
      option: name,
      value: v,
    });
  return n;
}

/** Reads and JSON-parses a file; a missing file or bad JSON becomes a PolicyInputError naming the file. */
export function readJsonFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new PolicyInputError(path, `cannot read file (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new PolicyInputError(path, `not valid JSON (${(err as Error).message})`);
  }
}

const fmtSec = (s: number) => (s >= 100 ? s.toFixed(0) : s.toFixed(1)) + "s";
const fmtBytes = (b: number) => {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = b;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
};
const fmtRanges = (lost: Record<string, [number, number][]>) =>
  Object.entries(lost)
    .map(
      ([lane, rs]) =>
        `${lane}:${rs.length === 0 ? "none" : rs.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(",")}`,
    )
    .join(" ");

/** One table row per scenario/timeline of an evaluation report. */
export function evaluationRows(
  report: EvaluationReport,
  audits: Readonly<Record<string, string>> = {},
): Record<string, unknown>[] {
  return report.reports.map((r) => ({
    scenario: r.name,
    kind: r.kind === "timeline" ? "timeline" : r.required ? "required" : "optional",
    cut:
      r.cut === null
        ? "none"
        : Object.entries(r.cut)
            .map(([l, s]) => `${l}:${s}`)
            .join(" "),
    lost: fmtRanges(r.lost),
    "lost bytes": fmtBytes(r.lostBytes),
    "oldest lost": fmtSec(r.oldestLostAgeMs / 1000),
    "usable at": r.destination,
    "time to usable": r.timeToUsable === null ? "unbounded" : fmtSec(r.timeToUsable.totalSec),
    deadline: fmtSec(r.deadlineSec),
    evidence: r.evidence,
    // Which stream the cut comes from: raw, or a coalesced image (issue #22).
    stream: r.stream,
    contributors: contributorsText(r.contributors, audits),
    "consistent by": consistentBy(r.cut === null ? 0 : Object.keys(r.cut).length, r.manifest, r.base),
    flags: r.flags.filter((f) => f !== "deadline_missed").join(",") || "-",
    verdict: r.verdict === "met" ? "met" : `NOT MET: ${r.reasons.join("; ")}`,
  }));
}

/** Exit code of `custody evaluate` when a required scenario or timeline is not met (0 when all are). */
export const EXIT_NOT_MET = 3;

/** Runs `custody evaluate`: parse + validate the state file, evaluate, print. Throws typed errors. */
export function runEvaluate(path: string, opts: OutputOptions): void {
  const state = parseEvaluationState(readJsonFile(path));
  const report = evaluateState(state);
  const ack = Object.entries(report.acknowledged)
    .map(([l, s]) => `${l}:${s}`)
    .join(" ");
  const audits = Object.fromEntries(state.holders.filter((h) => h.audit !== undefined).map((h) => [h.id, h.audit!]));
  const unproven = Object.keys(audits).filter((h) => audits[h] === "failed");
  const unprovenText = unproven.length
    ? `\nunproven (failed retention audit, claims not counted): ${unproven.join(" ")}`
    : "";
  const asOf = new Date(report.asOfMs).toISOString();
  const header = `volume ${report.volume}  acknowledged ${ack}  as of ${asOf}${unprovenText}`;
  printResult(
    opts,
    Object.keys(audits).length ? { ...report, holderAudits: audits } : report,
    evaluationRows(report, audits),
    header,
  );
  const failing = report.reports.filter((r) => r.required && r.verdict !== "met");
  if (failing.length > 0) {
    cliIo().stderr(`contract not met: ${failing.map((r) => `${r.name} (${r.reasons.join("; ")})`).join(", ")}\n`);
    cliIo().setExitCode(EXIT_NOT_MET);
  }
}

/** One table row per graph (chosen first, then the best of each shape). */
export function placementRows(result: PlacementResult): Record<string, unknown>[] {
  const row = (label: string, g: CustodyGraph) => ({
    graph: label,
    shape: g.shape,
    holders: g.holders.length,
    edges: g.edges.map((e) => `${e.from}->${e.to}`).join(" "),
    "monthly $": g.monthlyUsd.toFixed(0),
    "worst lag": `${Math.max(...g.scenarios.map((s) => s.lagMs ?? Infinity)).toFixed(1)}ms`,
    contract: g.meetsContract ? "met" : "NOT met",
  });
  return [
    row("chosen", result.chosen),
    ...Object.entries(result.byShape).map(([shape, g]) => row(`best ${shape}`, g!)),
  ];
}

/** One row per candidate edge: the values placement used and whether each was measured (with its age). */
export function edgeRows(
  input: ReturnType<typeof parsePlacementInput>,
  sources: readonly EdgeSource[],
): Record<string, unknown>[] {
  return input.edges.map((e, i) => {
    const s = sources[i]!;
    return {
      edge: `${e.from}-${e.to}`,
      rtt: `${e.rttMs.toFixed(1)}ms`,
      jitter: `${e.jitterMs.toFixed(1)}ms`,
      bandwidth: `${(e.bandwidthBytesPerSec / 1e6).toFixed(2)} MB/s`,
      source: s.source === "configured" ? "configured" : `measured (rtt ${s.rtt}, bandwidth ${s.bandwidth})`,
      age: s.ageMs === null ? "-" : `${(s.ageMs / 1000).toFixed(1)}s`,
    };
  });
}

/**
 * Runs `custody place`: parse + validate the candidates file, put in the fresh route measurements
 * (`routes`, younger than `maxAgeMs`; none: every edge as configured), search, print. Throws typed errors.
 */
export function runPlace(
  path: string,
  opts: OutputOptions,
  routes: readonly RouteMeasurement[] = [],
  maxAgeMs = 0,
): void {
  const configured = parsePlacementInput(readJsonFile(path));
  const measured = withMeasuredEdges(configured.edges, routes, Date.now(), maxAgeMs);
  const input = { ...configured, edges: measured.edges };
  const result = placeCustody(input);
  printResult(
    opts,
    { ...result, edgeSources: measured.sources },
    placementRows(result),
    `${result.graphsConsidered} custody graphs considered`,
  );
  if (!opts.json) {
    printResult(
      opts,
      null,
      edgeRows(input, measured.sources),
      "\nedge values (source: measured from route probes, or configured)",
    );
    const deps = Object.entries(result.chosen.feedDependencies).map(([h, d]) => ({
      holder: h,
      "fed through": d.join(" ") || "-",
    }));
    const scen = result.chosen.scenarios.map((s) => ({
      scenario: s.name,
      required: s.required ? "yes" : "no",
      "lag at loss": s.lagMs === null ? "unrecoverable" : `${s.lagMs}ms`,
      covered: s.covered ? "yes" : "NO",
    }));
    printResult(opts, null, scen, "\nchosen graph per scenario");
    printResult(opts, null, deps, "\nshared-path dependencies of the chosen graph");
  }
}

/** Registers `custody evaluate <state.json>` and `custody place <candidates.json>`. */
export function register(program: Command): void {
  program
    .command("evaluate")
    .description(
      "survival report per failure scenario: surviving cut, lost work, time to usable (schema: docs/policies.md)",
    )
    .argument("<state.json>", "custody state snapshot")
    .option("--json", "print one JSON object")
    .action(action((path: string, opts: OutputOptions) => runEvaluate(path, opts)));
  withOperatorConnection(
    program
      .command("place")
      .description("choose the cheapest custody graph that meets the contract (schema: docs/policies.md)")
      .argument("<candidates.json>", "candidate holders, measured edges, prices and the contract")
      .option("--json", "print one JSON object")
      .option(
        "--measured",
        "use the route measurements writers and holders publish on the bus (custody.v1.route.*) where fresh",
      )
      .option("--listen-ms <ms>", "with --measured, how long to collect measurements", "3000")
      .option("--max-age-sec <s>", "with --measured, measurements older than this are ignored", "60"),
  ).action(
    action(
      async (
        path: string,
        opts: OutputOptions & OperatorConnectionOptions & { measured?: boolean; listenMs: string; maxAgeSec: string },
      ) => {
        if (!opts.measured) return runPlace(path, opts);
        const maxAgeMs = positiveInt("max-age-sec", opts.maxAgeSec) * 1000;
        const { collectRouteMeasurements } = await import("./place-measured.ts");
        const { routes } = await collectRouteMeasurements(opts, positiveInt("listen-ms", opts.listenMs));
        runPlace(path, opts, routes, maxAgeMs);
      },
    ),
  );
}
