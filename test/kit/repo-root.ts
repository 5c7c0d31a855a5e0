import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = "wal-custody";
let found: string | undefined;

/**
 * The repository's root: the nearest folder above this module holding this package's
 * package.json. Found by walking up rather than by a fixed `..`, because a module bundled into a
 * test (`tools/scripts/bundle-tests.ts`) or into the CLI (`dist/`) sees another `import.meta.url`.
 */
export function repoRoot(): string {
  if (found !== undefined) return found;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === PACKAGE)
      return (found = dir);
    if (dirname(dir) === dir) throw new Error(`no ${PACKAGE} package.json above ${fileURLToPath(import.meta.url)}`);
  }
}
