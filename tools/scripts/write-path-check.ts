/**
 * Keeps docs/write-path.md true to the code (issue #48: one write's path, file by file, each folder
 * crossing named, at most 20 of them). The document's table lists the files one write passes
 * through, in order:
 *
 *   | # | file | what happens there | reached by | crossing |
 *
 * - every file exists;
 * - how each step is reached is checked against the imports:
 *   - `call`: the step and the one before it import each other, one way or the other, directly or
 *     through the target folder's `index.ts`;
 *   - `effect x.ts` / `event x.ts` (data handed on: a step's effect to its executor, a completion
 *     back to a machine): both files import `x.ts`, the module that defines that data;
 *   - `port x.ts` (a call through an interface): the step before imports `x.ts`, and `x.ts`
 *     imports the step or the step imports `x.ts` (it implements it);
 *   - `return`: back to a file met earlier on the path (the caller);
 *   - `NATS …`: a message between processes, nothing to check in the imports;
 * - `crossing` is filled exactly where the folder changes, naming both folders (`a/b → c`);
 * - the line `Folder crossings: N` states the count, and N is at most the limit.
 */
import { dirname, join } from "node:path";
import { relativeImports } from "./check-imports.ts";

export const MAX_WRITE_PATH_CROSSINGS = 20;

/** One row of the write-path table. */
export interface WritePathStep {
  readonly n: number;
  readonly file: string;
  readonly reachedBy: string;
  readonly crossing: string;
}

export interface WritePathViolation {
  readonly rule: "write_path";
  readonly message: string;
}

const cell = (c: string) => c.trim().replace(/^`|`$/g, "");

/** The table's rows (numbered rows of five cells) and the stated crossing count. */
export function parseWritePath(markdown: string): { steps: WritePathStep[]; stated: number | undefined } {
  const steps: WritePathStep[] = [];
  for (const line of markdown.split("\n")) {
    const cells = line.split("|").slice(1, -1);
    if (cells.length !== 5 || !/^\s*\d+\s*$/.test(cells[0]!)) continue;
    const [n, file, , reachedBy, crossing] = cells.map(cell) as [string, string, string, string, string];
    steps.push({ n: Number(n), file, reachedBy, crossing: crossing === "" || crossing === "—" ? "" : crossing });
  }
  const m = /^Folder crossings: (\d+)\b/m.exec(markdown);
  return { steps, stated: m ? Number(m[1]) : undefined };
}

function importsOf(file: string, files: ReadonlyMap<string, string>): Set<string> {
  const source = files.get(file) ?? "";
  return new Set(relativeImports(file, source).map((spec) => join(dirname(file), spec).split("\\").join("/")));
}

/**
 * True when `a` imports `b`, or the index of `b`'s folder or of a folder above it (which is how
 * other folders reach `b`: `transport/protocol/index.ts` re-exports `transport/protocol/wire/`).
 */
function reaches(a: string, b: string, files: ReadonlyMap<string, string>): boolean {
  const imports = importsOf(a, files);
  if (imports.has(b)) return true;
  for (let dir = dirname(b); dir !== "." && dir !== ""; dir = dirname(dir))
    if (imports.has(`${dir}/index.ts`)) return true;
  return false;
}

/** What is wrong with how `step` is reached from `prev`, if anything. */
function linkProblem(
  prev: WritePathStep,
  step: WritePathStep,
  files: ReadonlyMap<string, string>,
  earlierFiles: ReadonlySet<string>,
): string | undefined {
  if (/^NATS\b/.test(step.reachedBy)) return undefined;
  const data = /^(effect|event|port) `?([\w./-]+\.ts)`?/.exec(step.reachedBy);
  if (data) {
    const shared = data[2]!.includes("/") ? data[2]! : `${dirname(step.file)}/${data[2]}`;
    if (!files.has(shared)) return `step ${step.n}: ${shared} does not exist`;
    const implemented = data[1] === "port" && reaches(shared, step.file, files) ? [step.file] : [];
    const users = [prev.file, step.file].filter((f) => !implemented.includes(f) && !reaches(f, shared, files));
    return users.length === 0 ? undefined : `step ${step.n}: ${users.join(" and ")} do not import ${shared}`;
  }
  if (step.reachedBy === "return") {
    const earlier = earlierFiles.has(step.file);
    return earlier ? undefined : `step ${step.n}: returns to ${step.file}, which no earlier step called`;
  }
  if (step.reachedBy !== "call")
    return `step ${step.n}: reached by "${step.reachedBy}" (call, return, effect, event, port or NATS)`;
  if (reaches(prev.file, step.file, files) || reaches(step.file, prev.file, files)) return undefined;
  return `step ${step.n}: ${step.file} and ${prev.file} (step ${prev.n}) do not import each other`;
}

function checkStep(
  prev: WritePathStep,
  step: WritePathStep,
  files: ReadonlyMap<string, string>,
  earlierFiles: ReadonlySet<string>,
): string[] {
  const out: string[] = [];
  const problem = linkProblem(prev, step, files, earlierFiles);
  if (problem !== undefined) out.push(problem);
  const from = dirname(prev.file);
  const to = dirname(step.file);
  const expected = from === to ? "" : `${from} → ${to}`;
  if (step.crossing !== expected)
    out.push(`step ${step.n}: crossing is "${step.crossing}", the folders say "${expected}"`);
  return out;
}

/** Everything in `markdown` (docs/write-path.md) that the source tree `files` does not bear out. */
export function checkWritePath(markdown: string, files: ReadonlyMap<string, string>): WritePathViolation[] {
  const { steps, stated } = parseWritePath(markdown);
  const messages: string[] = [];
  if (steps.length < 2) messages.push("the table of steps is missing");
  steps.forEach((step, i) => {
    if (step.n !== i + 1) messages.push(`step ${step.n} is row ${i + 1}: number the rows in order`);
    if (!files.has(step.file)) messages.push(`step ${step.n}: ${step.file} does not exist`);
    else if (i > 0)
      messages.push(...checkStep(steps[i - 1]!, step, files, new Set(steps.slice(0, i - 1).map((s) => s.file))));
  });
  const counted = steps.filter((s) => s.crossing !== "").length;
  if (stated !== counted) messages.push(`"Folder crossings: ${stated}" stated, the table has ${counted}`);
  if (counted > MAX_WRITE_PATH_CROSSINGS)
    messages.push(`${counted} folder crossings, at most ${MAX_WRITE_PATH_CROSSINGS}`);
  return messages.map((message) => ({ rule: "write_path", message }));
}
