import { join } from "node:path";
import { ROLE_NODE_FLAGS } from "../../actors/runtime/index.ts";
import { repoRoot } from "./repo-root.ts";
import { ensureBundle } from "./script-bundle.ts";

/** The repository (tests, the demo and benches start roles from its CLI). */
const REPO_ROOT = repoRoot();
/** The bundled CLI: our TypeScript in one ESM file, node_modules left external (resolved from the repo). */
export const CLI_BUNDLE = join(REPO_ROOT, "dist", "custody.mjs");

/**
 * Makes sure `dist/custody.mjs` is built from the current sources (test/kit/script-bundle.ts); false when it cannot be.
 */
export function ensureCliBundle(): boolean {
  return ensureBundle(join(REPO_ROOT, "cli", "main.ts"), CLI_BUNDLE, "custody-command");
}

/**
 * The command line that runs `custody <args>` as a process of its own. A role process started
 * through tsx spends about 1.2 s of CPU more than the same CLI bundled (1.7 s against 0.55 s on
 * this machine's 2 cores), and the test suite starts hundreds of them; so the bundle is used when
 * it is fresh (or could be made so), tsx otherwise. A role (`run …`) gets ROLE_NODE_FLAGS, as deployed.
 */
export function custodyCommand(args: readonly string[]): { command: string; args: string[] } {
  const flags = args[0] === "run" ? ROLE_NODE_FLAGS : [];
  if (ensureCliBundle()) return { command: process.execPath, args: [...flags, CLI_BUNDLE, ...args] };
  return { command: process.execPath, args: [...flags, "--import", "tsx", join(REPO_ROOT, "cli", "main.ts"), ...args] };
}
