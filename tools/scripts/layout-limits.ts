/**
 * The shape limits the layout check holds product code to (issue #48): lines of at most
 * `MAX_COLUMNS` columns and functions of at most `MAX_FUNCTION_LINES` lines, and, for every file
 * (tests included), no import cycle between files; and the repository's to at most
 * `MAX_TOP_LEVEL_FOLDERS` top-level folders. They replace a 450-line file limit, which made
 * files squeezed rather than split: a long file is fine when it holds one concept, a long function
 * or line is not. Pure: the caller reads the files (`readSourceTree`).
 */
import ts from "typescript";
import { dirname, join } from "node:path";
import { relativeImports } from "./check-imports.ts";

/** Widest a line of product code may be. */
export const MAX_COLUMNS = 120;
/** Longest a function of product code may be, from the line it starts on to the line it ends on. */
export const MAX_FUNCTION_LINES = 70;

/**
 * Most top-level folders the repository may have (issue #48: a top level that shows the card):
 * the product's nine, `sim`, `tools`, `test`, `examples` and `docs`. Dot-folders (`.ci/`) do not count.
 */
export const MAX_TOP_LEVEL_FOLDERS = 14;

/** One limit broken, with where. */
export interface LimitViolation {
  readonly rule: "line_too_long" | "function_too_long" | "file_cycle" | "too_many_folders";
  readonly message: string;
}

/**
 * More than `max` top-level folders among `paths` (the repository's tracked files, from its root),
 * dot-folders aside: one violation listing them all.
 */
export function checkTopLevelFolders(paths: Iterable<string>, max = MAX_TOP_LEVEL_FOLDERS): LimitViolation[] {
  const folders = new Set<string>();
  for (const p of paths) if (p.includes("/") && !p.startsWith(".")) folders.add(p.split("/")[0]!);
  if (folders.size <= max) return [];
  const names = [...folders].sort().join(", ");
  return [
    {
      rule: "too_many_folders",
      message: `${folders.size} top-level folders (at most ${max}): ${names}; gather the new one under an existing one`,
    },
  ];
}

/** Product code: everything outside `test/` (tests exercise the product; their shape is theirs). */
const isProduct = (file: string): boolean => !file.startsWith("test/");

/** Lines of product code wider than `max` columns. */
export function checkLineWidths(files: ReadonlyMap<string, string>, max = MAX_COLUMNS): LimitViolation[] {
  const out: LimitViolation[] = [];
  for (const [file, source] of files) {
    if (!isProduct(file)) continue;
    source.split("\n").forEach((line, i) => {
      if (line.length > max) {
        out.push({ rule: "line_too_long", message: `${file}:${i + 1} is ${line.length} columns (at most ${max})` });
      }
    });
  }
  return out;
}

/** Functions, methods, arrows, constructors and accessors of product code longer than `max` lines. */
export function checkFunctionLengths(files: ReadonlyMap<string, string>, max = MAX_FUNCTION_LINES): LimitViolation[] {
  const out: LimitViolation[] = [];
  for (const [file, source] of files) {
    if (!isProduct(file)) continue;
    const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    const visit = (node: ts.Node): void => {
      if (isFunctionLike(node)) {
        const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const lines = sf.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
        if (lines > max) {
          const name = functionName(node);
          out.push({
            rule: "function_too_long",
            message: `${file}:${first + 1} ${name} has ${lines} lines (at most ${max}): split it into its steps`,
          });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

function isFunctionLike(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessor(node) ||
    ts.isSetAccessor(node)
  );
}

function functionName(node: ts.FunctionLikeDeclaration): string {
  if (ts.isConstructorDeclaration(node)) return "the constructor";
  if (node.name !== undefined && ts.isIdentifier(node.name)) return node.name.text;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return "a function";
}

/**
 * Files that import each other round a loop, type-only imports included (a loop of types is still
 * two concepts that cannot be read apart). Each loop is reported once, naming its files.
 */
export function checkFileCycles(files: ReadonlyMap<string, string>): LimitViolation[] {
  const graph = new Map<string, string[]>();
  for (const [file, source] of files) {
    const targets = relativeImports(file, source).map((spec) => join(dirname(file), spec).split("\\").join("/"));
    graph.set(
      file,
      targets.filter((t) => files.has(t)),
    );
  }
  return stronglyConnected(graph)
    .filter((group) => group.length > 1 || graph.get(group[0]!)!.includes(group[0]!))
    .map((group) => ({ rule: "file_cycle", message: `files import each other: ${group.sort().join(", ")}` }));
}

/** Tarjan's strongly connected components of `graph`, iteratively (a deep tree must not overflow the stack). */
function stronglyConnected(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  let next = 0;
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    const work: { node: string; edge: number }[] = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const edges = graph.get(top.node)!;
      if (top.edge < edges.length) {
        const to = edges[top.edge++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(top.node)!));
      if (low.get(top.node) === index.get(top.node)) {
        const group: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          group.push(member);
        } while (member !== top.node);
        groups.push(group);
      }
    }
  }
  return groups;
}
