import type { ProcessStats } from "../actors/runtime/index.ts";
import type { ExpectedRole } from "./expected-roles.ts";

/**
 * What `custody ps` shows (pure): every process that answered and every role expected to run that
 * did not, each with a state — `running`, `FENCED` (a newer incarnation replaced it: it serves
 * nothing and is exiting), `ABSENT` (expected, no answer), `retired` (the control log retired it) —
 * and figures rounded for a reader, their units in the column headers.
 */

/** One line of `custody ps`. */
export interface PsEntry {
  readonly role: string;
  readonly id: string;
  readonly state: "running" | "FENCED" | "ABSENT" | "retired";
  readonly note: string;
  readonly stats?: ProcessStats;
  readonly expected?: ExpectedRole;
}

/** How a figure is shown: its column header and the divisor to the header's unit. */
interface FigureColumn {
  readonly key: string;
  readonly header: string;
  readonly divisor?: number;
}

const MIB = 2 ** 20;

/** The figures worth a column, per role (the rest stays in `--json`). */
const FIGURES: Readonly<Record<string, readonly FigureColumn[]>> = {
  holder: [
    { key: "retainedRamBytes", header: "RAM MiB", divisor: MIB },
    { key: "retainedDiskBytes", header: "disk MiB", divisor: MIB },
  ],
  writer: [
    { key: "head", header: "head seq" },
    { key: "custodyLagSeqs", header: "lag seqs" },
    { key: "custodyBacklogBytes", header: "backlog MiB", divisor: MIB },
  ],
  controller: [
    { key: "evaluations", header: "evals" },
    { key: "evalMsP99", header: "eval p99 ms" },
  ],
  "base-builder": [
    { key: "baseThroughSeq", header: "base seq" },
    { key: "baseBytes", header: "base MiB", divisor: MIB },
  ],
};

/**
 * A number as a reader wants it: integers whole, other values to about three significant digits
 * (51.098595999999816 → "51.1", 3.5 → "3.5", 0.00390625 → "0.0039", 1234.5 → "1235").
 */
export function humanNumber(n: number): string {
  if (!Number.isFinite(n) || Number.isInteger(n)) return String(n);
  const a = Math.abs(n);
  const decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : Math.min(8, 1 - Math.floor(Math.log10(a)));
  // Through a number again, so no trailing zeros: 3.5, not 3.50.
  return String(Number(n.toFixed(decimals)));
}

/** Every answering process and every expected role that did not answer, by role then id. */
export function psEntries(stats: readonly ProcessStats[], expected: readonly ExpectedRole[] | undefined): PsEntry[] {
  const byKey = new Map((expected ?? []).map((e) => [`${e.role}/${e.id}`, e]));
  const answered = new Set<string>();
  const out: PsEntry[] = [];
  for (const s of stats) {
    const k = `${s.role}/${s.id}`;
    answered.add(k);
    const e = byKey.get(k);
    const newer =
      e?.logIncarnation !== undefined && s.incarnation !== undefined && e.logIncarnation > s.incarnation
        ? e.logIncarnation
        : undefined;
    const fencedBy = s.fencedBy ?? newer;
    const note =
      fencedBy !== undefined
        ? `incarnation ${fencedBy} replaced it`
        : e === undefined
          ? expected === undefined
            ? ""
            : "not in the deployment"
          : e.logStatus === "retired"
            ? "retired in the control log"
            : e.logStatus === "failed"
              ? "declared failed in the control log"
              : "";
    out.push({
      role: s.role,
      id: s.id,
      state: fencedBy !== undefined ? "FENCED" : "running",
      note,
      stats: s,
      ...(e !== undefined ? { expected: e } : {}),
    });
  }
  for (const e of expected ?? []) {
    if (answered.has(`${e.role}/${e.id}`)) continue;
    const where = [
      e.planned ? `in roles.json${e.region !== undefined ? `, region ${e.region}` : ""}` : "",
      e.logIncarnation !== undefined
        ? `admitted in the control log (incarnation ` +
          `${e.logIncarnation}${e.logStatus === "failed" ? ", declared failed" : ""})`
        : "",
    ].filter((x) => x !== "");
    out.push({
      role: e.role,
      id: e.id,
      state: e.logStatus === "retired" ? "retired" : "ABSENT",
      note: e.logStatus === "retired" ? "retired in the control log" : `no answer; ${where.join("; ")}`,
      expected: e,
    });
  }
  return out.sort((a, b) => a.role.localeCompare(b.role) || a.id.localeCompare(b.id));
}

/** One role's table rows: figures rounded, units in the headers; an absent role's columns left empty. */
export function psRows(entries: readonly PsEntry[]): Record<string, string>[] {
  return entries.map((e) => {
    const s = e.stats;
    const inc = s?.incarnation ?? e.expected?.logIncarnation;
    const row: Record<string, string> = { id: e.id, state: e.state, inc: inc === undefined ? "" : String(inc) };
    const cell = (v: number | undefined, divisor = 1) => (v === undefined ? "" : humanNumber(v / divisor));
    Object.assign(row, {
      pid: s === undefined ? "" : String(s.pid),
      "up s": cell(s === undefined ? undefined : Math.round(s.uptimeMs / 1000)),
      "rss MiB": cell(s?.rssBytes, MIB),
      "heap MiB": cell(s?.heapUsedBytes, MIB),
      "loop p99 ms": cell(s?.eventLoopP99Ms),
    });
    for (const f of FIGURES[e.role] ?? []) row[f.header] = cell(s?.figures[f.key], f.divisor);
    row["note"] = e.note;
    return row;
  });
}

/** The roles present in `entries`, in order. */
export function rolesOf(entries: readonly PsEntry[]): string[] {
  return [...new Set(entries.map((e) => e.role))];
}
