import { mkdirSync, readdirSync, renameSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { repoRoot } from "./repo-root.ts";

/** The repository (tests, the demo and benches start roles from its CLI). */
const REPO_ROOT = repoRoot();
/** The bundled CLI: our TypeScript in one ESM file, node_modules left external (resolved from the repo). */
export const CLI_BUNDLE = join(REPO_ROOT, "dist", "custody.mjs");
/** Folders whose TypeScript the CLI may import (everything but tests, benches and tools). */
const SOURCE_SKIP = new Set(["node_modules", "dist", "test", "bench", ".git", ".ci", "runs", "docs", "examples"]);

let fresh: boolean | undefined;

/** The newest modification time of any `.ts` file under `dir` outside the skipped folders. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!SOURCE_SKIP.has(e.name) && !e.name.startsWith(".")) newest = Math.max(newest, newestSource(join(dir, e.name)));
    } else if (e.name.endsWith(".ts")) newest = Math.max(newest, statSync(join(dir, e.name)).mtimeMs);
  }
  return newest;
}

/**
 * Makes sure `dist/custody.mjs` is newer than every source file, building it with esbuild when it
 * is not (into a file of this process's own, renamed into place, so test processes building at
 * the same moment never see half a file). False when it cannot be built: callers then run the
 * CLI through tsx. Checked once per process.
 */
export function ensureCliBundle(): boolean {
  if (fresh !== undefined) return fresh;
  const built = (() => {
    try {
      return statSync(CLI_BUNDLE).mtimeMs;
    } catch {
      return 0;
    }
  })();
  if (built > newestSource(REPO_ROOT)) return (fresh = true);
  try {
    mkdirSync(dirname(CLI_BUNDLE), { recursive: true });
    const tmp = `${CLI_BUNDLE}.${process.pid}.${Date.now()}.tmp.mjs`;
    // Loaded only here: esbuild is a development dependency, and the CLI itself (which reaches this
    // file through the demo's launcher) must not need it.
    const { buildSync } = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
    buildSync({ entryPoints: [join(REPO_ROOT, "cli", "main.ts")], bundle: true, platform: "node", format: "esm", target: `node${process.versions.node}`, packages: "external", outfile: tmp, logLevel: "error" });
    renameSync(tmp, CLI_BUNDLE);
    return (fresh = true);
  } catch (err) {
    process.stderr.write(`custody-command: cannot bundle the CLI (${String(err)}); starting roles through tsx\n`);
    return (fresh = false);
  }
}

/**
 * The command line that runs `custody <args>` as a process of its own. A role process started
 * through tsx spends about 1.2 s of CPU more than the same CLI bundled (1.7 s against 0.55 s on
 * this machine's 2 cores), and the test suite starts hundreds of them; so the bundle is used when
 * it is fresh (or could be made so), tsx otherwise.
 */
export function custodyCommand(args: readonly string[]): { command: string; args: string[] } {
  if (ensureCliBundle()) return { command: process.execPath, args: [CLI_BUNDLE, ...args] };
  return { command: process.execPath, args: ["--import", "tsx", join(REPO_ROOT, "cli", "main.ts"), ...args] };
}
