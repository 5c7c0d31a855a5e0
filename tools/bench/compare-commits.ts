/**
 * bench:compare — one bench, this tree against an earlier commit, in interleaved pairs.
 *
 *   npm run bench:compare -- --base a471ccf~1 --bench e2e --pairs 8 --keys iops_custody_on,protected_iops \
 *     [--higher iops_custody_on,protected_iops] [--json] -- --rate 1000
 *
 * The base commit is checked out in a temporary git worktree (sharing this tree's node_modules).
 * The pairs run base, head, base, head, … so drift of a shared machine hits both sides alike.
 * Each run is `npm run bench:<name> -- --json <args after -->`, and its last line is read as JSON.
 * The table shows, per key, both medians, head/base and how much worse head is: for a key named
 * in `--higher`, lower is worse; for every other key, higher is worse (times, CPU per write).
 * A run that prints no JSON is counted as failed and left out of the medians.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Command } from "commander";
import { failWith, formatTable } from "../../core/index.ts";
import { median } from "./sample-stats.ts";

interface CompareOptions {
  base: string;
  bench: string;
  pairs: string;
  keys: string;
  higher?: string;
  json?: boolean;
}

const root = resolve(new URL("../..", import.meta.url).pathname);

/** A worktree of `commit` in a temp dir; removed by the returned function. */
function checkout(commit: string): { dir: string; remove(): void } {
  const dir = join(mkdtempSync(join(tmpdir(), "bench-base-")), "tree");
  execFileSync("git", ["worktree", "add", "--detach", dir, commit], { cwd: root, stdio: "ignore" });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  return {
    dir,
    remove: () => {
      execFileSync("git", ["worktree", "remove", "--force", dir], { cwd: root, stdio: "ignore" });
      rmSync(resolve(dir, ".."), { recursive: true, force: true });
    },
  };
}

/** One run of the bench in `dir`: its JSON object, or undefined when it printed none. */
function runBench(dir: string, bench: string, args: readonly string[]): Record<string, unknown> | undefined {
  const r = spawnSync("npm", ["run", "--silent", `bench:${bench}`, "--", "--json", ...args], {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const last = r.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function numbers(runs: readonly Record<string, unknown>[], key: string): number[] {
  return runs.map((r) => r[key]).filter((v): v is number => typeof v === "number" && Number.isFinite(v));
}

/** Per key: both medians, the ratio, and how much worse head is (percent, negative = better). */
function compare(
  base: Record<string, unknown>[],
  head: Record<string, unknown>[],
  keys: string[],
  higher: Set<string>,
) {
  return keys.map((key) => {
    const b = numbers(base, key);
    const h = numbers(head, key);
    const mb = b.length ? median(b) : NaN;
    const mh = h.length ? median(h) : NaN;
    const worse = higher.has(key) ? (mb - mh) / mb : (mh - mb) / mb;
    const round = (x: number) => Math.round(x * 1000) / 1000;
    return { key, base: round(mb), head: round(mh), ratio: round(mh / mb), worse_pct: round(worse * 100), n: h.length };
  });
}

async function main(o: CompareOptions, benchArgs: string[]): Promise<void> {
  const pairs = Number(o.pairs);
  if (!Number.isInteger(pairs) || pairs < 1) throw new RangeError(`--pairs must be a positive integer: ${o.pairs}`);
  const keys = o.keys.split(",").filter(Boolean);
  const higher = new Set((o.higher ?? "").split(",").filter(Boolean));
  const base = checkout(o.base);
  const runs = { base: [] as Record<string, unknown>[], head: [] as Record<string, unknown>[] };
  let failed = 0;
  try {
    for (let i = 0; i < pairs; i++) {
      for (const side of ["base", "head"] as const) {
        const out = runBench(side === "base" ? base.dir : root, o.bench, benchArgs);
        if (out === undefined) failed++;
        else runs[side].push(out);
        process.stderr.write(`pair ${i + 1}/${pairs} ${side}: ${out === undefined ? "no JSON" : "ok"}\n`);
      }
    }
  } finally {
    base.remove();
  }
  const rows = compare(runs.base, runs.head, keys, higher);
  process.stdout.write(formatTable(rows) + "\n");
  if (o.json) {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    process.stdout.write(JSON.stringify({ bench: o.bench, base: o.base, head, pairs, failed, rows, runs }) + "\n");
  }
}

const program = new Command("bench:compare")
  .requiredOption("--base <commit>", "the commit to compare against")
  .requiredOption("--bench <name>", "which bench: e2e, holder, …")
  .option("--pairs <n>", "interleaved pairs", "8")
  .requiredOption("--keys <a,b>", "JSON keys to compare")
  .option("--higher <a,b>", "keys where higher is better (throughput)")
  .option("--json", "one JSON object on the last line")
  .argument("[benchArgs...]", "arguments for the bench, after --")
  .action(async (benchArgs: string[], o: CompareOptions) => main(o, benchArgs).catch(failWith));
await program.parseAsync(process.argv);
