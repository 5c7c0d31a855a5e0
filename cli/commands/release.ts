import type { Command } from "commander";
import { RangeSet } from "../../lanes/index.ts";
import {
  authorizeReleases,
  parseEvaluationState,
  PolicyInputError,
  type ReleaseRequest,
} from "../../policies/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import { readJsonFile } from "./policy.ts";
import { cliIo } from "../cli-io.ts";

/** Exit code of `custody release check` when any requested release is refused. */
export const EXIT_REFUSED = 3;

/**
 * Parses `holder:lane:first-last[,first-last…]` (a single sequence is `n`). Throws PolicyInputError
 * naming the argument.
 */
export function parseReleaseArg(arg: string, i: number): ReleaseRequest {
  const field = `releases[${i}]`;
  const parts = arg.split(":");
  if (parts.length !== 3 || parts[0] === "" || parts[1] === "")
    throw new PolicyInputError(field, `expected holder:lane:first-last, got ${JSON.stringify(arg)}`);
  const runs = parts[2]!.split(",").map((r) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(r);
    const a = m ? Number(m[1]) : NaN;
    const b = m ? Number(m[2] ?? m[1]) : NaN;
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || a < 1 || b < a)
      throw new PolicyInputError(field, `bad range ${JSON.stringify(r)} (want first-last with 1 <= first <= last)`);
    return RangeSet.of(a, b);
  });
  return { holder: parts[0]!, lane: parts[1]!, ranges: runs.reduce((x, y) => x.union(y), RangeSet.EMPTY) };
}

/** Registers `custody release check <state.json> <holder:lane:range>…`. */
export function register(program: Command): void {
  const release = program.command("release").description("release decisions of the policy engine");
  release
    .command("check")
    .description(
      "decide the given releases jointly, in order, against a state snapshot: allowed or refused, with the " +
        "reasons and the required scenarios that block each",
    )
    .argument("<state.json>", "custody state snapshot (schema: docs/policies.md)")
    .argument("<releases...>", "holder:lane:first-last[,first-last...]")
    .option("--json", "one JSON object on one line")
    .action(
      action((path: string, args: string[], opts: OutputOptions) => {
        const requests = args.map(parseReleaseArg);
        const state = parseEvaluationState(readJsonFile(path));
        const decisions = authorizeReleases(state, requests);
        const json = decisions.map((d) => ({
          holder: d.request.holder,
          lane: d.request.lane,
          ranges: d.request.ranges.toJSON(),
          allowed: d.allowed,
          reasons: d.reasons,
          scenarios: d.scenarios,
        }));
        const rows = decisions.map((d) => ({
          holder: d.request.holder,
          lane: d.request.lane,
          ranges: d.request.ranges.toString(),
          decision: d.allowed ? "allowed" : "REFUSED",
          reasons: d.reasons.join(",") || "-",
          "blocked by": d.scenarios.join("; ") || "-",
        }));
        const refused = decisions.filter((d) => !d.allowed).length;
        printResult(
          opts,
          { decisions: json },
          rows,
          `${decisions.length - refused} of ${decisions.length} allowed (decided jointly, in order: each sees ` +
            `the ones allowed before it)`,
        );
        if (refused > 0) cliIo().setExitCode(EXIT_REFUSED);
      }),
    );
}
