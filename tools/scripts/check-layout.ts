/**
 * The layout check `npm test` runs first: the folder import rules (`check-imports.ts`: index and
 * no-loop rules, forbidden imports) and the shape limits (`layout-limits.ts`) over the whole source
 * tree, the number of top-level folders among the tracked files (`git ls-files`), and that
 * docs/write-path.md still walks real files linked by real imports (`write-path-check.ts`).
 *
 * Usage: `tsx tools/scripts/check-layout.ts [ROOT]` — prints each violation and exits 1 when there is one.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkForbiddenImports, checkImportRules, readSourceTree } from "./check-imports.ts";
import { checkFileCycles, checkFunctionLengths, checkLineWidths, checkTopLevelFolders } from "./layout-limits.ts";
import { checkWritePath } from "./write-path-check.ts";

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const files = readSourceTree(root);

/** The tracked files (`git ls-files`); outside a git checkout, the source files read. */
function trackedPaths(): string[] {
  try {
    const out = execFileSync("git", ["ls-files", "-z"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return out.split("\0").filter((p) => p !== "");
  } catch {
    return [...files.keys()];
  }
}

const violations = [
  ...checkImportRules(files),
  ...checkForbiddenImports(files),
  ...checkLineWidths(files),
  ...checkFunctionLengths(files),
  ...checkFileCycles(files),
  ...checkTopLevelFolders(trackedPaths()),
  ...(existsSync(join(root, "docs/write-path.md"))
    ? checkWritePath(readFileSync(join(root, "docs/write-path.md"), "utf8"), files)
    : []),
];
for (const v of violations) console.error(`${v.rule}: ${v.message}`);
console.log(`layout check: ${files.size} files, ${violations.length} violation(s)`);
process.exit(violations.length === 0 ? 0 : 1);
