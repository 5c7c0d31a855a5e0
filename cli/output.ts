import { failWith as reportFailure, formatTable } from "../core/index.ts";
import { cliIo } from "./cli-io.ts";

export { errorCode, formatTable } from "../core/index.ts";

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

/** Prints the error line (`error [code]: message`) of `err` to this CLI run's stderr and sets its exit code 1. */
export function failWith(err: unknown): void {
  reportFailure(err, cliIo());
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
