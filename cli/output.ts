import { CustodyError } from "../core/index.ts";
import { cliIo } from "./cli-io.ts";

/** Options every subcommand accepts. */
export interface OutputOptions {
  json?: boolean;
}

/**
 * Prints `rows` as an aligned text table, or (with --json) `jsonValue` as one JSON object on a
 * single line, so scripts can take the last line of output.
 */
export function printResult(
  opts: OutputOptions,
  jsonValue: unknown,
  rows: Record<string, unknown>[],
  title?: string,
): void {
  if (opts.json) {
    cliIo().stdout(JSON.stringify(jsonValue) + "\n");
    return;
  }
  if (title) cliIo().stdout(title + "\n");
  cliIo().stdout(formatTable(rows) + "\n");
}

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
 * Prints the error line (`error [code]: message`) to stderr and sets exit code 1. Another
 * library's message is kept to one line; a CustodyError's is printed as written (init's
 * control_plane_lost is one `error [control_plane_lost]: …` line per scenario).
 */
export function failWith(err: unknown): void {
  const text = err instanceof Error ? err.message : String(err);
  const message = err instanceof CustodyError ? text : text.replace(/\s*\n\s*/g, " ");
  cliIo().stderr(`error [${errorCode(err)}]: ${message}\n`);
  cliIo().setExitCode(1);
}

/** Wraps an async action so any throw becomes one error line and exit code 1. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void> | void): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      failWith(err);
    }
  };
}

/** The holders a cut relies on, each with its retention-audit state when it has one (`h-nj:passed`). */
export function contributorsText(contributors: readonly string[], audits: Readonly<Record<string, string>>): string {
  return contributors.map((h) => (audits[h] === undefined ? h : `${h}:${audits[h]}`)).join(" ") || "-";
}

/** What makes a multi-lane cut consistent: its manifest, else the base it is ("-" for one lane or no cut). */
export function consistentBy(
  lanes: number,
  manifest: string | null | undefined,
  base: string | null | undefined,
): string {
  if (lanes < 2) return "-";
  return manifest != null ? `manifest ${manifest}` : base != null ? `base ${base}` : "-";
}
