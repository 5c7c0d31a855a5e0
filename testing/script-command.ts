import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { repoRoot } from "./repo-root.ts";

const REPO_ROOT = repoRoot();
/** Where the bundled scripts go, mirroring their paths in the repository. */
const SCRIPTS_DIR = join(REPO_ROOT, "dist", "scripts");

/** Per script: its bundle, or undefined when it could not be built (checked once per process). */
const built = new Map<string, string | undefined>();

/** The modification time of `file`, or undefined when it is gone. */
function mtime(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/** True when `bundle` exists and no file it was built from (listed in `inputs`) changed since. */
function fresh(bundle: string, inputs: string): boolean {
  const at = mtime(bundle);
  if (at === undefined || !existsSync(inputs)) return false;
  const files = JSON.parse(readFileSync(inputs, "utf8")) as string[];
  return files.every((f) => (mtime(join(REPO_ROOT, f)) ?? Infinity) <= at);
}

/**
 * The bundle of `script` under `dist/scripts/`, built with esbuild when it is missing or older than
 * any file it was built from (into files of this process's own, renamed into place, so test
 * processes building at the same moment never see half a file); undefined when it cannot be built.
 */
function scriptBundle(script: string): string | undefined {
  const abs = resolve(script);
  if (built.has(abs)) return built.get(abs);
  const bundle = join(SCRIPTS_DIR, relative(REPO_ROOT, abs)).replace(/\.ts$/, ".mjs");
  const inputs = `${bundle}.inputs.json`;
  const result = (() => {
    if (fresh(bundle, inputs)) return bundle;
    try {
      mkdirSync(dirname(bundle), { recursive: true });
      const tmp = `${bundle}.${process.pid}.${Date.now()}.tmp`;
      // Loaded only here: esbuild is a development dependency.
      const { buildSync } = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
      const r = buildSync({ entryPoints: [abs], bundle: true, platform: "node", format: "esm", target: "node20", packages: "external", outfile: `${tmp}.mjs`, absWorkingDir: REPO_ROOT, metafile: true, logLevel: "error" });
      writeFileSync(`${tmp}.json`, JSON.stringify(Object.keys(r.metafile.inputs)));
      renameSync(`${tmp}.json`, inputs);
      renameSync(`${tmp}.mjs`, bundle);
      return bundle;
    } catch (err) {
      process.stderr.write(`script-command: cannot bundle ${script} (${String(err)}); starting it through tsx\n`);
      return undefined;
    }
  })();
  built.set(abs, result);
  return result;
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
