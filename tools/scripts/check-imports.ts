/**
 * The layout rule `npm test` enforces (issue #18): code in one folder reaches another folder only
 * through that folder's `index.ts`, and no two folders import each other, directly or round a
 * longer loop. A folder here is a unit: a top-level folder, or one of `UNIT_FOLDERS` below it (a
 * former top-level folder that kept its own index when issue #48 gathered the tree under fewer
 * top-level folders, `actors/runtime/`, `transport/protocol/`, `tools/demo/`, ...), which is then
 * not part of its parent's unit. Tests (`test/`, the test kit `test/kit/` aside) are exempt from
 * the first rule because they exercise internals on purpose; they still may not create folder
 * cycles (they are a leaf: nothing imports them).
 * Inside `actors/` the same two rules hold one level down: a file in one sub-folder (`actors/holder/`)
 * reaches a sibling sub-folder only through that sub-folder's `index.ts`, and sub-folders form no
 * loop. Files directly in `actors/` (the machines and the folder's own index) are the parent of those
 * sub-folders and may use their modules.
 *
 * Some code may not reach other code at all, not even through an index (`FORBIDDEN_IMPORTS`): tools
 * and the simulator never import the CLI, the CLI never imports tools (the demo), and product code
 * never imports tools or tests.
 *
 * `tools/scripts/check-layout.ts` runs these rules with the shape limits of `layout-limits.ts`.
 */
import ts from "typescript";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

/** One rule broken, with the file and import that break it. */
export interface ImportViolation {
  readonly rule: "bypasses_index" | "folder_cycle" | "forbidden_import";
  readonly message: string;
}

/** Folders whose code may import other folders' internals (they test them). */
const EXEMPT_FROM_INDEX_RULE = new Set(["test"]);

/** Folders whose sub-folders are held to the index and no-loop rules among themselves. */
const NESTED_FOLDERS = new Set(["actors"]);

/**
 * Folders below the top level that are units of their own, held to the index and no-loop rules as
 * a top-level folder is: each keeps the `index.ts` it had as a top-level folder before issue #48.
 */
export const UNIT_FOLDERS: readonly string[] = [
  "actors/runtime",
  "actors/runtime/telemetry",
  "policies/deploy",
  "test/kit",
  "tools/attack",
  "tools/bench",
  "tools/chaos",
  "tools/demo",
  "tools/scripts",
  "tools/soak",
  "transport/protocol",
  "transport/security",
];

/** The unit `file` (a path from the root) belongs to: the deepest of UNIT_FOLDERS holding it, else its top folder. */
export function unitOf(file: string, units: readonly string[] = UNIT_FOLDERS): string | undefined {
  if (!file.includes("/")) return undefined;
  let unit = file.split("/")[0]!;
  for (const u of units) if (file.startsWith(`${u}/`) && u.length > unit.length) unit = u;
  return unit;
}

/** Relative module specifiers of a file's static and dynamic imports and re-exports. */
export function relativeImports(fileName: string, source: string): string[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specs.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      specs.push(node.arguments[0].text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      specs.push(node.argument.literal.text); // `import("../x/y.ts").T` in a type position
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return specs.filter((s) => s.startsWith("."));
}

/**
 * Checks the layout rules over `files` (paths relative to the project root, with `/` separators,
 * mapped to their source). Pure: the caller reads the files.
 */
export function checkImportRules(files: ReadonlyMap<string, string>): ImportViolation[] {
  const violations: ImportViolation[] = [];
  // `actors/holder/x.ts` → `actors/holder`; undefined outside a nested folder or directly in it.
  const subFolderOf = (p: string): string | undefined => {
    const unit = unitOf(p);
    if (unit === undefined || !NESTED_FOLDERS.has(unit)) return undefined;
    const rest = p.slice(unit.length + 1).split("/");
    return rest.length > 1 ? `${unit}/${rest[0]}` : undefined;
  };
  const edges = new Map<string, Map<string, string>>(); // from folder -> to folder -> one example
  const subEdges = new Map<string, Map<string, string>>(); // the same between sibling sub-folders
  const addEdge = (graph: Map<string, Map<string, string>>, from: string, to: string, example: string): void => {
    if (!graph.has(from)) graph.set(from, new Map());
    if (!graph.get(from)!.has(to)) graph.get(from)!.set(to, example);
  };
  for (const [file, source] of files) {
    const from = unitOf(file);
    if (from === undefined) continue;
    for (const spec of relativeImports(file, source)) {
      const target = join(dirname(file), spec).split(sep).join("/");
      if (target.startsWith("..")) continue;
      const to = unitOf(target);
      if (to === undefined) continue;
      if (to === from) {
        const fromSub = subFolderOf(file);
        const toSub = subFolderOf(target);
        if (fromSub === undefined || toSub === undefined || fromSub === toSub) continue;
        addEdge(subEdges, fromSub, toSub, `${file} → ${target}`);
        if (target !== `${toSub}/index.ts`) {
          violations.push({
            rule: "bypasses_index",
            message: `${file} imports ${target}: import from ${toSub}/index.ts instead`,
          });
        }
        continue;
      }
      addEdge(edges, from, to, `${file} → ${target}`);
      if (target !== `${to}/index.ts` && !EXEMPT_FROM_INDEX_RULE.has(from)) {
        violations.push({
          rule: "bypasses_index",
          message: `${file} imports ${target}: import from ${to}/index.ts instead`,
        });
      }
    }
  }
  violations.push(...loopsIn(edges), ...loopsIn(subEdges));
  return violations;
}

/** Each loop of `edges` (folder → folder → example import), reported once with the imports that close it. */
function loopsIn(edges: ReadonlyMap<string, ReadonlyMap<string, string>>): ImportViolation[] {
  const violations: ImportViolation[] = [];
  // Depth-first search; each back edge closes a loop.
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const seenLoops = new Set<string>();
  const dfs = (f: string): void => {
    state.set(f, "open");
    stack.push(f);
    for (const to of [...(edges.get(f)?.keys() ?? [])].sort()) {
      if (state.get(to) === "open") {
        const loop = [...stack.slice(stack.indexOf(to)), to];
        const key = [...loop.slice(0, -1)].sort().join(",");
        if (!seenLoops.has(key)) {
          seenLoops.add(key);
          const via = loop.slice(0, -1).map((a, i) => edges.get(a)!.get(loop[i + 1]!)!);
          violations.push({
            rule: "folder_cycle",
            message: `folders import each other: ${loop.join(" → ")} (${via.join("; ")})`,
          });
        }
      } else if (state.get(to) === undefined) dfs(to);
    }
    stack.pop();
    state.set(f, "done");
  };
  for (const f of [...edges.keys()].sort()) if (state.get(f) === undefined) dfs(f);
  return violations;
}

/** Code (`from`) that must never reach other code (`to`), directly or through any chain of imports. */
export interface ForbiddenImport {
  readonly from: (file: string) => boolean;
  readonly to: (file: string) => boolean;
  readonly why: string;
}

/** True for files under any of `folders` (paths from the root). */
const under =
  (...folders: string[]) =>
  (file: string): boolean =>
    folders.some((f) => file.startsWith(`${f}/`));

/**
 * Product code: any folder's but the tools', the tests' (the test kit's included) and the examples'
 * (programs and tests written as a project that uses this one would write them).
 */
const isProduct = (file: string): boolean => file.includes("/") && !under("tools", "test", "examples")(file);

/**
 * Which code may never reach which (issue #48), checked in this order; an import is reported by
 * the first rule it breaks.
 */
export const FORBIDDEN_IMPORTS: readonly ForbiddenImport[] = [
  {
    from: under("tools", "sim"),
    to: under("cli"),
    why:
      "tools and the simulator never import the CLI: what they share with it lives in core/ or actors/runtime/, " +
      "and a tool that needs the CLI runs `custody` as a process (the test kit's custodyCommand)",
  },
  {
    from: under("cli"),
    to: under("tools"),
    why: "the CLI never imports tools such as the demo: what both use is product code (actors/runtime/telemetry/)",
  },
  {
    from: under("examples"),
    to: under("tools", "cli"),
    why: "examples use the product's public folders and the test kit, as another project would; never tools or the CLI",
  },
  {
    from: isProduct,
    to: under("tools", "test", "examples"),
    why: "product code never imports tools/, test/ (the test kit included) or examples/",
  },
];

/** Each file's relative imports that are files of `files`, resolved to paths from the root. */
function importGraph(files: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [file, source] of files) {
    const targets = relativeImports(file, source).map((spec) => join(dirname(file), spec).split(sep).join("/"));
    graph.set(
      file,
      targets.filter((t) => files.has(t)),
    );
  }
  return graph;
}

/** The shortest chain of imports from `start` to a file `to` accepts (both ends included); undefined when none. */
function chainTo(graph: ReadonlyMap<string, readonly string[]>, start: string, to: (f: string) => boolean) {
  const cameFrom = new Map<string, string | undefined>([[start, undefined]]);
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i]!;
    if (to(at)) {
      const chain: string[] = [];
      for (let f: string | undefined = at; f !== undefined; f = cameFrom.get(f)) chain.unshift(f);
      return chain;
    }
    for (const next of graph.get(at) ?? []) {
      if (!cameFrom.has(next)) {
        cameFrom.set(next, at);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/**
 * Imports that break a rule of `rules` (FORBIDDEN_IMPORTS): each import by a `from` file of a file
 * outside `from` that is, or through its own imports reaches, a `to` file — so an index that
 * re-exports a forbidden module counts. The message gives the chain of imports.
 */
export function checkForbiddenImports(
  files: ReadonlyMap<string, string>,
  rules: readonly ForbiddenImport[] = FORBIDDEN_IMPORTS,
): ImportViolation[] {
  const graph = importGraph(files);
  const violations: ImportViolation[] = [];
  const reported = new Set<string>();
  for (const rule of rules) {
    const chains = new Map<string, string[] | undefined>(); // target → its chain to a `to` file
    for (const file of [...files.keys()].sort()) {
      if (!rule.from(file)) continue;
      for (const target of graph.get(file)!) {
        if (rule.from(target) || reported.has(`${file} → ${target}`)) continue;
        if (!chains.has(target)) chains.set(target, chainTo(graph, target, rule.to));
        const chain = chains.get(target);
        if (chain === undefined) continue;
        reported.add(`${file} → ${target}`);
        const how = chain.length === 1 ? "" : ` (${[file, ...chain].join(" → ")})`;
        violations.push({
          rule: "forbidden_import",
          message: `${file} imports ${target}${how}: ${rule.why}`,
        });
      }
    }
  }
  return violations;
}

/** Reads every `.ts` file under `root` (skipping node_modules and dot folders). */
export function readSourceTree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      if (name === "node_modules" || name.startsWith(".")) continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(".ts") && !name.endsWith(".d.ts"))
        out.set(relative(root, p).split(sep).join("/"), readFileSync(p, "utf8"));
    }
  };
  walk(root);
  return out;
}
