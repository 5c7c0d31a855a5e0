import { join, relative, resolve } from "node:path";
import { repoRoot } from "./repo-root.ts";
import { ensureBundle } from "./script-bundle.ts";

const REPO_ROOT = repoRoot();
/** Where the bundled scripts go, mirroring their paths in the repository. */
const SCRIPTS_DIR = join(REPO_ROOT, "dist", "scripts");

/** The bundle of `script` under `dist/scripts/`; undefined when it cannot be built. */
function scriptBundle(script: string): string | undefined {
  const abs = resolve(script);
  const bundle = join(SCRIPTS_DIR, relative(REPO_ROOT, abs)).replace(/\.ts$/, ".mjs");
  return ensureBundle(abs, bundle, "script-command") ? bundle : undefined;
}

/**
 * The command line that runs the TypeScript `script` with `args` as a process of its own (a crash
 * writer a test SIGKILLs, the simulator's CLI): its esbuild bundle in plain Node when it can be
 * built, tsx otherwise. Started through tsx, such a child spends about 0.3 s more CPU and 0.7 s
 * more wall time before its first line on this machine, and some tests start dozens. The bundle
 * lives under `dist/scripts/`, so a script that finds files relative to its own `import.meta.url`
 * must not be started this way (one that walks up to the repository, as repoRoot does, may).
 */
export function scriptCommand(script: string, args: readonly string[]): { command: string; args: string[] } {
  const bundle = scriptBundle(script);
  if (bundle !== undefined) return { command: process.execPath, args: [bundle, ...args] };
  return { command: process.execPath, args: ["--import", "tsx", script, ...args] };
}
