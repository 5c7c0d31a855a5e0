import { CustodyError } from "./custody-error.ts";

/**
 * The plain-text output every command-line program of the repository shares: the `custody` CLI,
 * the simulator, chaos, soak and the benches print their tables and error lines the same way.
 * Kept here, not in `cli/`, so a tool prints like the CLI without importing it.
 */

/** Where an error line goes and how the program ends: the process's own, or a captured CLI run's. */
export interface ErrorOutput {
  stderr(text: string): void;
  setExitCode(code: number): void;
}

/** This process's stderr and exit code. */
const processOutput: ErrorOutput = {
  stderr: (text) => {
    process.stderr.write(text);
  },
  setExitCode: (code) => {
    process.exitCode = code;
  },
};

/** Aligned plain-text table; columns are the union of the rows' keys in first-seen order. */
export function formatTable(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return "(no rows)";
  const cols: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  const cell = (v: unknown) =>
    v === undefined || v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [
    line(cols),
    line(widths.map((w) => "-".repeat(w))),
    ...rows.map((r) => line(cols.map((c) => cell(r[c])))),
  ].join("\n");
}

/**
 * The code of an error line: a CustodyError's own; else the error's `code` in lower case (Node's
 * `ENOENT`, whose message names the path, is `enoent`); else `unexpected` (a failure no typed
 * error describes yet).
 */
export function errorCode(err: unknown): string {
  if (err instanceof CustodyError) return err.code;
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" && /^[A-Za-z][A-Za-z0-9_]*$/.test(code) ? code.toLowerCase() : "unexpected";
}

/**
 * Prints the error line (`error [code]: message`) to `out`'s stderr (the process's by default) and
 * sets exit code 1. Another library's message is kept to one line; a CustodyError's is printed as
 * written (init's control_plane_lost is one `error [control_plane_lost]: …` line per scenario).
 */
export function failWith(err: unknown, out: ErrorOutput = processOutput): void {
  const text = err instanceof Error ? err.message : String(err);
  const message = err instanceof CustodyError ? text : text.replace(/\s*\n\s*/g, " ");
  out.stderr(`error [${errorCode(err)}]: ${message}\n`);
  out.setExitCode(1);
}
