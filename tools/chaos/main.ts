#!/usr/bin/env -S npx tsx
/**
 * `npm run chaos -- --seed N [--duration-s S] [--json]`: one Jepsen-style run on real processes
 * (see chaos-run.ts). Prints what happened and the checks as a table, and with `--json` one JSON
 * object on the last line. Exits 1 when anything acknowledged is stranded or lost, a process is
 * left behind, or the control log could not take a commit for longer than its appenders wait.
 */
import { Command } from "commander";
import { failWith, formatTable } from "../../core/index.ts";
import { CONTROL_UNAVAILABLE_BOUND_S, runChaos } from "./chaos-run.ts";

const program = new Command("chaos")
  .description("Jepsen-style chaos run on real processes: faults from a seed, then heal and check")
  .requiredOption("--seed <n>", "seed of the fault schedule")
  .option("--duration-s <s>", "seconds of faults under load", "40")
  .option("--json", "one JSON object on the last line")
  .action(async (o: { seed: string; durationS: string; json?: boolean }) => {
    try {
      const seed = Number(o.seed);
      const durationS = Number(o.durationS);
      if (!Number.isSafeInteger(seed) || seed < 0)
        throw new Error(`--seed must be a non-negative integer, got ${o.seed}`);
      if (!Number.isFinite(durationS) || durationS < 10 || durationS > 600)
        throw new Error(`--duration-s must be 10..600, got ${o.durationS}`);
      const r = await runChaos(seed, { durationS, log: (l) => process.stderr.write(l + "\n") });
      const bad =
        r.stranded_ranges.length > 0 ||
        r.lost_acknowledged > 0 ||
        r.leftover_processes > 0 ||
        r.max_control_unavailable_s > CONTROL_UNAVAILABLE_BOUND_S;
      process.stdout.write(
        formatTable([
          {
            seed: r.seed,
            faults: r.faults.length,
            acknowledged: r.acknowledged,
            protected_through: r.protected_through_after_heal,
            stranded: JSON.stringify(r.stranded_ranges),
            max_heal_s: r.max_heal_s,
            lost: r.lost_acknowledged,
            leftover: r.leftover_processes,
            control_failovers: r.control_failovers,
            max_control_unavailable_s: r.max_control_unavailable_s,
            seconds: r.seconds,
            verdict: bad ? "FAIL" : "ok",
          },
        ]) + "\n",
      );
      if (o.json) process.stdout.write(JSON.stringify(r) + "\n");
      if (bad) process.exitCode = 1;
    } catch (err) {
      failWith(err);
    }
  });

await program.parseAsync(process.argv);
