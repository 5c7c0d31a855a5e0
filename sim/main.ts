#!/usr/bin/env -S npx tsx
/**
 * The simulator CLI (`npm run sim -- …`):
 *   --seed N [--holders K] [--steps M] [--duration-ms D]   run one world, print a summary; on a
 *       violation print the seed, the shortest trace found, and exit 1
 *   --seeds A..B [--holders K] [--duration-ms D]           sweep seeds, print counts; exit 1 on any violation
 * Worlds run the production actors (real Holder, VolumeWriter and Controller machines): there is
 * no second model of them. `--json` prints one JSON object on the last line.
 */
import { Command } from "commander";
import { failWith, formatTable } from "../core/index.ts";
import { formatTraceEvent } from "./event-trace.ts";
import { runActorWorld } from "./actor-runner.ts";
import { minimizeRun, type WorldRunner } from "./minimize.ts";
import type { RunOptions } from "./run-options.ts";
import { sweep } from "./sweep.ts";
import { SimArgumentError } from "./sim-argument-error.ts";

function int(name: string, v: string | undefined, lo: number, hi: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < lo || n > hi)
    throw new SimArgumentError(`--${name} must be an integer in ${lo}..${hi}, got "${v}"`, { [name]: v });
  return n;
}

interface Flags {
  seed?: string;
  seeds?: string;
  holders?: string;
  steps?: string;
  durationMs?: string;
  json?: boolean;
  minimize: boolean;
  failover?: boolean;
}

async function runOne(seed: number, opts: RunOptions, flags: Flags, run: WorldRunner): Promise<void> {
  const r = await run(seed, opts);
  const summary = {
    seed,
    holders: r.spec.holders.length,
    steps: r.steps,
    virtualMs: Math.round(r.virtualMs),
    writes: r.writes,
    grants: r.grants,
    strikesChecked: r.strikesChecked,
    recoveredInBudget: `${r.recovery.inBudget}/${r.recovery.strikes}`,
    faults: r.scheduleShape || "(none)",
    traceHash: r.traceHash,
    violation: r.violation?.invariant ?? null,
    errors: r.errors ?? [],
  };
  if ((r.errors ?? []).length > 0) process.exitCode = 1;
  if (r.violation === undefined) {
    if (flags.json) process.stdout.write(JSON.stringify(summary) + "\n");
    else process.stdout.write(formatTable([summary]) + "\n");
    return;
  }
  const small = flags.minimize ? await minimizeRun(r, opts, run) : r;
  const tail = small.trace.slice(-40);
  if (flags.json) {
    process.stdout.write(
      JSON.stringify({ ...summary, message: r.violation.message, minimizedFaults: small.spec.faults, trace: tail }) +
        "\n",
    );
  } else {
    process.stdout.write(`VIOLATION seed=${seed} ${r.violation.invariant}: ${r.violation.message}\n`);
    process.stdout.write(
      `reproduce: npm run sim -- --seed ${seed} --holders ${r.spec.holders.length}` +
        `${opts.durationMs ? ` --duration-ms ${opts.durationMs}` : ""}` +
        `${flags.failover ? " --failover" : ""}\n`,
    );
    process.stdout.write(
      `minimized fault schedule (${small.spec.faults.length} of ${r.spec.faults.length} faults, ` +
        `${small.steps} steps):\n`,
    );
    for (const f of small.spec.faults) process.stdout.write(`  ${JSON.stringify(f)}\n`);
    process.stdout.write(`last ${tail.length} trace events:\n`);
    for (const e of tail) process.stdout.write(`  ${formatTraceEvent(e)}\n`);
  }
  process.exitCode = 1;
}

async function runSweep(range: string, opts: RunOptions, flags: Flags, run: WorldRunner): Promise<void> {
  const m = /^(\d+)\.\.(\d+)$/.exec(range);
  if (!m || Number(m[1]) > Number(m[2]))
    throw new SimArgumentError(`--seeds must be A..B with A <= B, got "${range}"`, { seeds: range });
  const started = Date.now();
  const res = await sweep(Number(m[1]), Number(m[2]), opts, run);
  const out = { ...res, wallMs: Date.now() - started };
  if (flags.json) process.stdout.write(JSON.stringify(out) + "\n");
  else {
    const { violating, ...counts } = out;
    process.stdout.write(formatTable([counts]) + "\n");
    for (const v of violating) process.stdout.write(`  seed ${v.seed}: ${v.invariant} — ${v.message}\n`);
    for (const f of res.recovery.failing) process.stdout.write(`  seed ${f.seed}: liveness — ${f.failure}\n`);
  }
  // Liveness is asserted: every strike the contract allows must be repaired within its budget.
  const liveness = res.recovery.late + res.recovery.never;
  if (res.violations > 0 || res.errors > 0 || liveness > 0) process.exitCode = 1;
}

/** Builds the `sim` program (exported for tests). */
export function buildSimProgram(): Command {
  const program = new Command("sim")
    .description("deterministic custody simulator: one seed → one world, the same run every time")
    .option("--seed <n>", "run one world")
    .option("--seeds <a..b>", "sweep a seed range")
    .option("--holders <k>", "holders (1-10); default drawn from the seed")
    .option("--steps <m>", "stop after m clock steps")
    .option("--duration-ms <d>", "virtual duration of each run")
    .option("--no-minimize", "print the failing run without shrinking it")
    .option("--json", "one JSON object on the last line")
    .option(
      "--failover",
      "a standby controller shares the volume through the control lease; faults also pause the active one",
    )
    .action(async (flags: Flags) => {
      try {
        const holders = int("holders", flags.holders, 1, 10);
        const steps = int("steps", flags.steps, 1, 100_000_000);
        const durationMs = int("duration-ms", flags.durationMs, 1, 86_400_000);
        const opts: RunOptions = {
          ...(holders !== undefined ? { holders } : {}),
          ...(steps !== undefined ? { steps } : {}),
          ...(durationMs !== undefined ? { durationMs } : {}),
          ...(flags.failover ? { failover: true } : {}),
        };
        const run: WorldRunner = runActorWorld;
        if (flags.seeds !== undefined) await runSweep(flags.seeds, opts, flags, run);
        else if (flags.seed !== undefined)
          await runOne(int("seed", flags.seed, 0, Number.MAX_SAFE_INTEGER)!, opts, flags, run);
        else throw new SimArgumentError("give --seed N or --seeds A..B", {});
      } catch (err) {
        failWith(err);
      }
    });
  return program;
}

if (import.meta.url === `file://${process.argv[1]}`) await buildSimProgram().parseAsync(process.argv);
