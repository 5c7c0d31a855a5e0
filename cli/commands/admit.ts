import type { Command } from "commander";
import { checkAllProtectedRam, parseProtectedRamInput } from "../../policies/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import { readJsonFile } from "./policy.ts";
import { EXIT_REFUSED } from "./release.ts";
import { cliIo } from "../cli-io.ts";

/**
 * `custody admit <evidence.json>`: protected-RAM admission. Every node that shares a drain target,
 * controller, link or power supply with another is assumed to drain at the same moment, splitting
 * the shared target's and link's capacity; a node is admitted when detection + drain + persistence
 * completion + margin fits in its usable hold-up time. A target or link two nodes share must state
 * its capacity. Exit 3 when any node is refused.
 */
export function register(program: Command): void {
  program
    .command("admit")
    .description(
      "protected-RAM admission under simultaneous drains: which nodes may claim power-loss survival for their " +
        "queued bytes (exit 3 when one may not)",
    )
    .argument(
      "<evidence.json>",
      "{nodes: [{id, queuedProtectedBytes, reservedDrainBytesPerSec, detectionSec, persistenceCompletionSec, " +
        "marginSec, usableHoldUpSec, drainTarget, controller, link, powerSupply}], capacities: {targets: {id: " +
        "bytes/s}, links: {id: bytes/s}}}",
    )
    .option("--json", "one JSON object on one line")
    .action(
      action((path: string, o: OutputOptions) => {
        const input = parseProtectedRamInput(readJsonFile(path));
        const verdicts = checkAllProtectedRam(input.nodes, input.capacities);
        const r1 = (x: number) => Math.round(x * 1000) / 1000;
        const rows = verdicts.map((v) => ({
          node: v.node,
          verdict: v.admitted ? "admitted" : "REFUSED",
          "drain s": r1(v.drainSec),
          "required s": r1(v.requiredSec),
          "hold-up s": r1(v.usableHoldUpSec),
          "slack s": r1(v.slackSec),
          bottleneck: v.bottleneck,
          "drains with": v.drainingTogether.filter((n) => n !== v.node).join(",") || "-",
        }));
        const refused = verdicts.filter((v) => !v.admitted).length;
        printResult(
          o,
          { verdicts },
          rows,
          `${verdicts.length - refused} of ${verdicts.length} admitted (simultaneous drains share targets and links)`,
        );
        if (refused > 0) cliIo().setExitCode(EXIT_REFUSED);
      }),
    );
}
