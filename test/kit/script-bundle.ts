import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { repoRoot } from "./repo-root.ts";

const REPO_ROOT = repoRoot();

/** Per bundle file: whether it is usable (checked once per process). */
const checked = new Map<string, boolean>();

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
 * Makes `outfile` an esbuild bundle of the TypeScript `entry` (node_modules left external) that is
 * newer than every file it was built from (listed beside it in `<outfile>.inputs.json`), building
 * it when it is not — into files of this process's own, renamed into place, so test processes
 * building at the same moment never see half a file. False when it cannot be built (callers then
 * run the entry through tsx); checked once per process.
 */
export function ensureBundle(entry: string, outfile: string, who: string): boolean {
  const known = checked.get(outfile);
  if (known !== undefined) return known;
  const inputs = `${outfile}.inputs.json`;
  let ok = fresh(outfile, inputs);
  if (!ok) {
    try {
      mkdirSync(dirname(outfile), { recursive: true });
      const tmp = `${outfile}.${process.pid}.${Date.now()}.tmp`;
      // Loaded only here: esbuild is a development dependency, and what merely loads the test kit
      // (the demo, a bench) must not need it.
      const { buildSync } = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
      const r = buildSync({
        entryPoints: [entry],
        bundle: true,
        platform: "node",
        format: "esm",
        target: `node${process.versions.node}`,
        packages: "external",
        outfile: `${tmp}.mjs`,
        absWorkingDir: REPO_ROOT,
        metafile: true,
        logLevel: "error",
      });
      writeFileSync(`${tmp}.json`, JSON.stringify(Object.keys(r.metafile.inputs)));
      renameSync(`${tmp}.json`, inputs);
      renameSync(`${tmp}.mjs`, outfile);
      ok = true;
    } catch (err) {
      process.stderr.write(`${who}: cannot bundle ${entry} (${String(err)}); starting it through tsx\n`);
    }
  }
  checked.set(outfile, ok);
  return ok;
}
