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
export function printResult(opts: OutputOptions, jsonValue: unknown, rows: Record<string, unknown>[], title?: string): void {
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
  const cell = (v: unknown) => (v === undefined || v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(cols), line(widths.map((w) => "-".repeat(w))), ...rows.map((r) => line(cols.map((c) => cell(r[c]))))].join("\n");
}

/** Prints one clear error line to stderr and sets a non-zero exit code. */
export function failWith(err: unknown): void {
  const msg =
    err instanceof CustodyError
      ? `error [${err.code}]: ${err.message}`
      : `error: ${err instanceof Error ? err.message : String(err)}`;
  cliIo().stderr(msg + "\n");
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
export function consistentBy(lanes: number, manifest: string | null | undefined, base: string | null | undefined): string {
  if (lanes < 2) return "-";
  return manifest != null ? `manifest ${manifest}` : base != null ? `base ${base}` : "-";
}
