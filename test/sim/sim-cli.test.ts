import test from "ava";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { scriptCommand } from "../kit/script-command.ts";

const run = promisify(execFile);
const sim = (...args: string[]) => {
  const c = scriptCommand("sim/main.ts", args);
  return run(c.command, c.args, { cwd: process.cwd() });
};

test("sim --seed prints a one-line JSON summary with the trace hash, and the same seed prints the same hash", async (t) => {
  const a = await sim("--seed", "4", "--holders", "3", "--duration-ms", "5000", "--json");
  const b = await sim("--seed", "4", "--holders", "3", "--duration-ms", "5000", "--json");
  const last = JSON.parse(a.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
  t.is(last.seed, 4);
  t.is(last.holders, 3);
  t.is(last.violation, null);
  t.regex(String(last.traceHash), /^[0-9a-f]{64}$/);
  t.is(a.stdout, b.stdout);
});

test("sim --seeds A..B sweeps and counts distinct fault schedules", async (t) => {
  const { stdout } = await sim("--seeds", "1..6", "--duration-ms", "4000", "--json");
  const res = JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, number>;
  t.is(res.runs, 6);
  t.is(res.violations, 0);
  t.true((res.distinctScheduleShapes ?? 0) >= 2);
});

test("a bad argument is one clear error line and exit code 1", async (t) => {
  const err = await t.throwsAsync(sim("--seeds", "9..2"));
  t.is((err as unknown as { code: number }).code, 1);
  t.regex((err as unknown as { stderr: string }).stderr, /invalid_sim_argument/);
});
