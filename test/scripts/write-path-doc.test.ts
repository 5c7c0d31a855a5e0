/**
 * docs/write-path.md is checked against the code (tools/scripts/write-path-check.ts): the files it
 * walks exist, each step reached by a call imports or is imported by the one before, every folder
 * crossing is named, and there are at most 20.
 */
import test from "ava";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readSourceTree } from "../../tools/scripts/check-imports.ts";
import { checkWritePath, parseWritePath } from "../../tools/scripts/write-path-check.ts";
import { repoRoot } from "../kit/index.ts";

const files = new Map([
  ["a/api.ts", `import { run } from "./machine.ts";`],
  ["a/machine.ts", `import { store } from "../b/index.ts";`],
  ["b/index.ts", `export { store } from "./store.ts";`],
  ["b/store.ts", "export const store = 1;"],
  ["c/receiver.ts", `import { decide } from "./step.ts"; export const receive = 1;`],
  ["c/effects.ts", "export type Effect = 1;"],
  ["c/step.ts", `import type { Effect } from "./effects.ts";`],
  ["c/executor.ts", `import type { Effect } from "./effects.ts";`],
]);

const doc = (rows: string[], stated: number) =>
  ["| # | file | what | reached by | crossing |", "|---|---|---|---|---|", ...rows, "", `Folder crossings: ${stated}`].join(
    "\n",
  );

test("a path of real files linked by imports, with its crossings named and counted, passes", (t) => {
  const md = doc(
    [
      "| 1 | `a/api.ts` | the API | — | — |",
      "| 2 | `a/machine.ts` | the machine | call | — |",
      "| 3 | `b/store.ts` | stores | call | a → b |",
      "| 4 | `c/receiver.ts` | receives | NATS `x.y` | b → c |",
      "| 5 | `c/step.ts` | decides | call | — |",
      "| 6 | `c/executor.ts` | does | effect `effects.ts` | — |",
    ],
    2,
  );
  t.is(parseWritePath(md).steps.length, 6);
  t.deepEqual(checkWritePath(md, files), []);
});

test("a missing file, a step no import links, a wrong or missing crossing and a wrong count are each reported", (t) => {
  const md = doc(
    [
      "| 1 | `a/api.ts` | the API | — | — |",
      "| 2 | `b/store.ts` | skips the machine | call | a → b |",
      "| 3 | `c/receiver.ts` | receives | NATS `x.y` | — |",
      "| 4 | `c/gone.ts` | missing | call | — |",
      "| 5 | `c/executor.ts` | does | effect `a/machine.ts` | — |",
      "| 6 | `c/step.ts` | decides | posted | — |",
    ],
    3,
  );
  const messages = checkWritePath(md, files).map((v) => v.message);
  t.deepEqual(messages, [
    "step 2: b/store.ts and a/api.ts (step 1) do not import each other",
    'step 3: crossing is "", the folders say "b → c"',
    "step 4: c/gone.ts does not exist",
    "step 5: c/gone.ts and c/executor.ts do not import a/machine.ts",
    'step 6: reached by "posted" (call, return, effect, event, port or NATS)',
    '"Folder crossings: 3" stated, the table has 1',
  ]);
});

test("a port is an interface the caller imports and the callee implements; a return goes back to an earlier caller", (t) => {
  const withPort = new Map([
    ...files,
    ["c/ports.ts", `import type { Store } from "../b/store.ts";`],
    ["c/user.ts", `import type { Ports } from "./ports.ts";`],
  ]);
  const ok = doc(
    [
      "| 1 | `c/user.ts` | calls through its port | — | — |",
      "| 2 | `b/store.ts` | does the work | port `c/ports.ts` | c → b |",
      "| 3 | `c/user.ts` | carries on | return | b → c |",
    ],
    2,
  );
  t.deepEqual(checkWritePath(ok, withPort), []);
  const bad = doc(
    [
      "| 1 | `a/api.ts` | x | — | — |",
      "| 2 | `b/store.ts` | y | port `c/ports.ts` | a → b |",
      "| 3 | `c/user.ts` | z | return | b → c |",
    ],
    2,
  );
  t.deepEqual(
    checkWritePath(bad, withPort).map((v) => v.message),
    ["step 2: a/api.ts do not import c/ports.ts", "step 3: returns to c/user.ts, which no earlier step called"],
  );
});

test("more than 20 crossings is refused even when stated", (t) => {
  const rows = Array.from({ length: 22 }, (_, i) =>
    i === 0 ? "| 1 | `a/api.ts` | x | — | — |" : `| ${i + 1} | \`${i % 2 ? "c/receiver.ts" : "a/api.ts"}\` | x | NATS s | ${i % 2 ? "a → c" : "c → a"} |`,
  );
  const messages = checkWritePath(doc(rows, 21), files).map((v) => v.message);
  t.deepEqual(messages, ["21 folder crossings, at most 20"]);
});

test("docs/write-path.md walks the code as it is", (t) => {
  const root = repoRoot();
  const md = readFileSync(join(root, "docs/write-path.md"), "utf8");
  t.deepEqual(checkWritePath(md, readSourceTree(root)), []);
  t.true(parseWritePath(md).steps.length >= 10);
});
