import test from "ava";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { checkFileCycles, checkFunctionLengths, checkLineWidths, checkTopLevelFolders, MAX_TOP_LEVEL_FOLDERS } from "../../tools/scripts/layout-limits.ts";

const tree = (files: Record<string, string>) => new Map(Object.entries(files));
const fn = (name: string, bodyLines: number) => `function ${name}() {\n${"  f();\n".repeat(bodyLines)}}\n`;

test("a product line over 120 columns is refused naming file and line; 120 passes; tests are exempt", (t) => {
  const ok = "x".repeat(120);
  t.deepEqual(checkLineWidths(tree({ "a/ok.ts": ok, "test/t.test.ts": "y".repeat(300) })), []);
  const v = checkLineWidths(tree({ "a/wide.ts": `${ok}\n${"z".repeat(121)}\n` }));
  t.is(v.length, 1);
  t.is(v[0]!.rule, "line_too_long");
  t.regex(v[0]!.message, /a\/wide\.ts:2 is 121 columns/);
});

test("a function over 70 lines is refused naming it (declarations, methods, arrows); a long file of short ones passes", (t) => {
  const many = Array.from({ length: 20 }, (_, i) => fn(`f${i}`, 60)).join("");
  t.deepEqual(checkFunctionLengths(tree({ "a/many.ts": many, "test/t.test.ts": fn("big", 200) })), []);
  t.deepEqual(checkFunctionLengths(tree({ "a/edge.ts": fn("edge", 68) })), [], "70 lines with its braces");
  const arrow = `const run = () => {\n${"  f();\n".repeat(70)}};\n`;
  const method = `class K {\n  step() {\n${"    f();\n".repeat(75)}  }\n}\n`;
  const v = checkFunctionLengths(tree({ "a/long.ts": fn("longest", 69), "a/arrow.ts": arrow, "a/method.ts": method }));
  t.deepEqual(
    v.map((x) => x.message),
    [
      "a/long.ts:1 longest has 71 lines (at most 70): split it into its steps",
      "a/arrow.ts:1 run has 72 lines (at most 70): split it into its steps",
      "a/method.ts:2 step has 77 lines (at most 70): split it into its steps",
    ],
  );
});

test("files importing each other round a loop are refused once, type-only imports and tests included", (t) => {
  t.deepEqual(checkFileCycles(tree({ "a/x.ts": `import { y } from "./y.ts";`, "a/y.ts": "export const y = 1;" })), []);
  const v = checkFileCycles(
    tree({
      "a/x.ts": `import { y } from "./y.ts";`,
      "a/y.ts": `import { z } from "../b/z.ts";`,
      "b/z.ts": `import type { X } from "../a/x.ts";`,
      "test/p.ts": `export * from "./q.ts";`,
      "test/q.ts": `import "./p.ts";`,
    }),
  );
  t.deepEqual(
    v.map((x) => x.message),
    ["files import each other: a/x.ts, a/y.ts, b/z.ts", "files import each other: test/p.ts, test/q.ts"],
  );
  t.is(checkFileCycles(tree({ "a/self.ts": `import "./self.ts";` })).length, 1, "a file importing itself");
});

const CARD = ["actors", "arena", "cli", "core", "custody", "docs", "examples", "lanes", "policies", "sim", "test", "tools", "transport", "volume"];

test("14 top-level folders pass, dot-folders and root files aside; a 15th is refused listing them all", (t) => {
  t.is(MAX_TOP_LEVEL_FOLDERS, 14);
  const tracked = [...CARD.map((f) => `${f}/x.ts`), "actors/runtime/run-holder.ts", ".ci/run", ".gitignore", "README.md", "package.json"];
  t.deepEqual(checkTopLevelFolders(tracked), []);
  const v = checkTopLevelFolders([...tracked, "scripts/new-tool.ts"]);
  t.is(v.length, 1);
  t.is(v[0]!.rule, "too_many_folders");
  t.is(v[0]!.message, `15 top-level folders (at most 14): ${[...CARD, "scripts"].sort().join(", ")}; gather the new one under an existing one`);
  t.is(checkTopLevelFolders(["a/x", "b/y", "c/z"], 2).length, 1, "the limit is a parameter");
});

test("the repository's tracked files lie in the 14 folders of the card", (t) => {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  let tracked: string[];
  try {
    tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).split("\0").filter((p) => p !== "");
  } catch {
    return t.pass("not a git checkout");
  }
  const folders = [...new Set(tracked.filter((p) => p.includes("/") && !p.startsWith(".")).map((p) => p.split("/")[0]!))].sort();
  t.deepEqual(folders, CARD);
});
