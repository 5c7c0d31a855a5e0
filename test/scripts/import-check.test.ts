import test from "ava";
import { checkImportRules, relativeImports } from "../../scripts/check-imports.ts";

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
