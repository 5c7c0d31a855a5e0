import test from "ava";
import { fileURLToPath } from "node:url";
import { checkForbiddenImports, checkImportRules, readSourceTree, relativeImports, unitOf } from "../../tools/scripts/check-imports.ts";

const tree = (files: Record<string, string>) => new Map(Object.entries(files));

test("an import through the other folder's index passes", (t) => {
  const v = checkImportRules(tree({ "a/x.ts": `import { y } from "../b/index.ts";`, "b/index.ts": `export { y } from "./y.ts";`, "b/y.ts": "export const y = 1;" }));
  t.deepEqual(v, []);
});

test("an import of another folder's internal module is a bypass naming file and target", (t) => {
  const v = checkImportRules(tree({ "a/deep/x.ts": `import type { Y } from "../../b/y.ts";`, "b/y.ts": "export type Y = 1;" }));
  t.is(v.length, 1);
  t.is(v[0]!.rule, "bypasses_index");
  t.regex(v[0]!.message, /a\/deep\/x\.ts imports b\/y\.ts/);
});

test("re-exports and dynamic imports count as imports", (t) => {
  t.deepEqual(relativeImports("a.ts", `export * from "./r.ts"; const m = await import("../d/m.ts"); import "./side.ts"; import z from "zod"; let e: import("../e/t.ts").T;`), ["./r.ts", "../d/m.ts", "./side.ts", "../e/t.ts"]);
  const v = checkImportRules(tree({ "a/x.ts": `export { q } from "../b/q.ts"; const m = await import("../c/m.ts");` }));
  t.deepEqual(v.map((x) => x.rule), ["bypasses_index", "bypasses_index"]);
});

test("tests may reach internals but folder loops are refused, also round three folders", (t) => {
  t.deepEqual(checkImportRules(tree({ "test/t.ts": `import { y } from "../b/y.ts";` })), []);
  const v = checkImportRules(
    tree({
      "a/index.ts": `import { b } from "../b/index.ts";`,
      "b/index.ts": `import { c } from "../c/index.ts";`,
      "c/index.ts": `import type { a } from "../a/index.ts";`,
    }),
  );
  t.is(v.length, 1);
  t.is(v[0]!.rule, "folder_cycle");
  t.regex(v[0]!.message, /a → b → c → a/);
});

test("inside actors/, a sub-folder reaching into a sibling sub-folder's module is a bypass naming the sibling's index", (t) => {
  const v = checkImportRules(tree({ "actors/writer/w.ts": `import { noteSent } from "../holder/edge-repair.ts";`, "actors/holder/edge-repair.ts": "export const noteSent = 1;" }));
  t.is(v.length, 1);
  t.is(v[0]!.rule, "bypasses_index");
  t.regex(v[0]!.message, /actors\/writer\/w\.ts imports actors\/holder\/edge-repair\.ts: import from actors\/holder\/index\.ts instead/);
});

test("inside actors/, a sibling's index, the sub-folder's own files and the parent's files reaching down all pass", (t) => {
  const v = checkImportRules(
    tree({
      "actors/writer/w.ts": `import { noteSent } from "../holder/index.ts"; import { x } from "./x.ts";`,
      "actors/writer/x.ts": "export const x = 1;",
      "actors/holder/index.ts": `export { noteSent } from "./edge-repair.ts";`,
      "actors/holder/edge-repair.ts": "export const noteSent = 1;",
      "actors/holder.ts": `import { noteSent } from "./holder/edge-repair.ts";`,
      "protocol/wire/a.ts": `import { b } from "../other/b.ts";`,
    }),
  );
  t.deepEqual(v, []);
});

test("sub-folders of actors/ importing each other, even through their indexes, are a loop naming both imports", (t) => {
  const v = checkImportRules(
    tree({
      "actors/controller/c.ts": `import type { RepairPort } from "../repair/index.ts";`,
      "actors/repair/index.ts": `export { r } from "./r.ts";`,
      "actors/repair/r.ts": `import { c } from "../controller/index.ts";`,
      "actors/controller/index.ts": `export { c } from "./c.ts";`,
    }),
  );
  t.is(v.length, 1);
  t.is(v[0]!.rule, "folder_cycle");
  t.regex(v[0]!.message, /actors\/controller → actors\/repair → actors\/controller/);
  t.regex(v[0]!.message, /actors\/repair\/r\.ts → actors\/controller\/index\.ts/);
});

test("a sub-folder that is a unit of its own (actors/runtime) is reached only through its index, from its parent folder too", (t) => {
  t.is(unitOf("actors/runtime/telemetry/tracing.ts"), "actors/runtime/telemetry");
  t.is(unitOf("actors/runtime/run-holder.ts"), "actors/runtime");
  t.is(unitOf("actors/holder/holder.ts"), "actors");
  t.is(unitOf("tools/demo/run-demo.ts"), "tools/demo");
  t.is(unitOf("README.md"), undefined);
  t.deepEqual(
    checkImportRules(
      tree({
        "cli/x.ts": `import { runHolder } from "../actors/runtime/index.ts";`,
        "actors/runtime/run-holder.ts": `import { Holder } from "../index.ts"; import { setupTracing } from "./telemetry/index.ts";`,
        "tools/demo/d.ts": `import { runDemo } from "./demo-script.ts"; import { x } from "../../test/kit/index.ts";`,
      }),
    ),
    [],
  );
  const v = checkImportRules(
    tree({
      "cli/x.ts": `import { readRoleConfig } from "../actors/runtime/role-config.ts";`,
      "actors/holder.ts": `import { runHolder } from "./runtime/run-holder.ts";`,
    }),
  );
  t.deepEqual(v.map((x) => x.message), [
    "cli/x.ts imports actors/runtime/role-config.ts: import from actors/runtime/index.ts instead",
    "actors/holder.ts imports actors/runtime/run-holder.ts: import from actors/runtime/index.ts instead",
  ]);
});

test("a unit below the top level and its parent folder importing each other is a loop", (t) => {
  const v = checkImportRules(
    tree({
      "actors/index.ts": `export { r } from "./runtime/index.ts";`,
      "actors/runtime/index.ts": `import type { A } from "../index.ts";`,
    }),
  );
  t.is(v.length, 1);
  t.is(v[0]!.rule, "folder_cycle");
  t.regex(v[0]!.message, /actors → actors\/runtime → actors/);
});

test("a tool or the simulator importing the CLI is refused, through an index or any chain of imports too", (t) => {
  const ok = tree({
    "tools/soak/main.ts": `import { formatTable } from "../../core/index.ts"; import { custodyCommand } from "../../test/kit/index.ts";`,
    "sim/main.ts": `import { failWith } from "../core/index.ts";`,
    "core/index.ts": `export { formatTable, failWith } from "./command-output.ts";`,
    "core/command-output.ts": "export const formatTable = 1, failWith = 2;",
    "test/kit/index.ts": `export { custodyCommand } from "./custody-command.ts";`,
    "test/kit/custody-command.ts": "export const custodyCommand = 1;",
    "test/kit/custody-cli.ts": `import { runCliCaptured } from "../../cli/index.ts";`,
    "cli/index.ts": `export { formatTable } from "../core/index.ts";`,
  });
  t.deepEqual(checkForbiddenImports(ok), []);
  const direct = checkForbiddenImports(
    tree({
      "tools/bench/arena.bench.ts": `import { formatTable } from "../../cli/index.ts";`,
      "sim/main.ts": `import type { Flags } from "../cli/output.ts";`,
      "cli/index.ts": `export { formatTable } from "./output.ts";`,
      "cli/output.ts": "export const formatTable = 1;",
    }),
  );
  t.deepEqual(direct.map((v) => v.rule), ["forbidden_import", "forbidden_import"]);
  t.regex(direct[0]!.message, /^sim\/main\.ts imports cli\/output\.ts: tools and the simulator never import the CLI/);
  t.regex(direct[1]!.message, /^tools\/bench\/arena\.bench\.ts imports cli\/index\.ts: tools and the simulator never import the CLI/);
  // The test kit's index re-exporting its in-process CLI runner would bring the CLI into every tool that loads the kit.
  const through = checkForbiddenImports(
    new Map<string, string>([...ok, ["test/kit/index.ts", `export { custodyCommand } from "./custody-command.ts"; export * from "./custody-cli.ts";`]]),
  );
  t.is(through.length, 1);
  t.is(
    through[0]!.message.split(":")[0],
    "tools/soak/main.ts imports test/kit/index.ts (tools/soak/main.ts → test/kit/index.ts → test/kit/custody-cli.ts → cli/index.ts)",
  );
});

test("the CLI importing the demo, and product code importing tools or the test kit, are refused", (t) => {
  const v = checkForbiddenImports(
    tree({
      "cli/commands/trace.ts": `import { buildTraceTree } from "../../tools/demo/index.ts";`,
      "tools/demo/index.ts": `export { buildTraceTree } from "./trace-tree.ts";`,
      "tools/demo/trace-tree.ts": "export const buildTraceTree = 1;",
      "actors/runtime/x.ts": `import { startNatsServer } from "../../test/kit/index.ts";`,
      "test/kit/index.ts": "export const startNatsServer = 1;",
      "test/e2e/y.test.ts": `import { runDemo } from "../../tools/demo/index.ts"; import { x } from "../../actors/runtime/x.ts";`,
      "tools/chaos/z.ts": `import { startNatsServer } from "../../test/kit/index.ts";`,
    }),
  );
  t.deepEqual(
    v.map((x) => x.message.split(":")[0]),
    ["cli/commands/trace.ts imports tools/demo/index.ts", "actors/runtime/x.ts imports test/kit/index.ts"],
  );
  t.regex(v[0]!.message, /the CLI never imports tools such as the demo/);
  t.regex(v[1]!.message, /product code never imports tools\/, test\/ \(the test kit included\) or examples\//);
});

test("examples use the test kit but never tools or the CLI, and product code never imports an example", (t) => {
  const v = checkForbiddenImports(
    tree({
      "examples/it/a.test.ts": `import { withNatsServer } from "../../test/kit/index.ts"; import { e } from "../e/e.ts";`,
      "examples/e/e.ts": `import { startHolder } from "../../actors/index.ts"; export const e = 1;`,
      "examples/e/bad.ts": `import { runDemo } from "../../tools/demo/index.ts"; import { c } from "../../cli/c.ts";`,
      "actors/index.ts": "export const startHolder = 1;",
      "actors/uses-example.ts": `import { e } from "../examples/e/e.ts";`,
      "test/kit/index.ts": "export const withNatsServer = 1;",
      "tools/demo/index.ts": "export const runDemo = 1;",
      "cli/c.ts": "export const c = 1;",
    }),
  );
  t.deepEqual(
    v.map((x) => x.message.split(":")[0]).sort(),
    [
      "actors/uses-example.ts imports examples/e/e.ts",
      "examples/e/bad.ts imports cli/c.ts",
      "examples/e/bad.ts imports tools/demo/index.ts",
    ],
  );
});

test("the source tree keeps the layout: no index bypass, no folder or actors sub-folder loop, no forbidden import", (t) => {
  const files = readSourceTree(fileURLToPath(new URL("../..", import.meta.url)));
  const violations = [...checkImportRules(files), ...checkForbiddenImports(files)];
  t.deepEqual(violations.map((v) => `${v.rule}: ${v.message}`), []);
});
