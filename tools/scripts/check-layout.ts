/**
 * The layout check `npm test` runs first: the folder import rules (`check-imports.ts`) and the shape
 * limits (`layout-limits.ts`) over the whole source tree.
 *
 * Usage: `tsx tools/scripts/check-layout.ts [ROOT]` — prints each violation and exits 1 when there is one.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkImportRules, readSourceTree } from "./check-imports.ts";
import { checkFileCycles, checkFunctionLengths, checkLineWidths } from "./layout-limits.ts";

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const files = readSourceTree(root);
const violations = [
  ...checkImportRules(files),
  ...checkLineWidths(files),
  ...checkFunctionLengths(files),
  ...checkFileCycles(files),
];
for (const v of violations) console.error(`${v.rule}: ${v.message}`);
console.log(`layout check: ${files.size} files, ${violations.length} violation(s)`);
process.exit(violations.length === 0 ? 0 : 1);
