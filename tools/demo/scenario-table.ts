/**
 * The per-scenario result table (pure): for each named scenario, the cut the policy engine
 * predicted from receipts before any failure, the cut the run actually recovered (where the run
 * played that scenario), the committed range lost, RPO, the RTO estimate next to the measured
 * recovery time, plus the monthly transfer cost of every custody leg.
 */
import { legMonthlyCost } from "../../policies/index.ts";

/** One scenario row. */
export interface ScenarioRow {
  readonly scenario: string;
  readonly required: boolean;
  /** Predicted surviving cut (lane head), null = nothing survives. */
  readonly predictedCut: number | null;
  /** Cut recovered in this run, when the run played the scenario. */
  readonly observedCut: number | null | undefined;
  readonly acknowledged: number;
  /** `first–last` of committed sequences lost, or "none". */
  readonly lostRange: string;
  readonly rpoSeqs: number;
  readonly rpoBytes: number;
  readonly rpoAgeMs: number;
  readonly rtoEstimateSec: number | null;
  readonly rtoMeasuredSec: number | undefined;
  readonly contributors: readonly string[];
}

/** One custody leg and its cost at the rate it carried. */
export interface LegRow {
  /** Sites: the sender's (several joined by ", ") and the receiver's. */
  readonly from: string;
  readonly to: string;
  /**
   * The volume whose stream the leg carries, and its sending and receiving actors (absent: a leg priced
   * outside a run).
   */
  readonly volume?: string;
  readonly senders?: readonly string[];
  readonly receiver?: string;
  readonly usdPerGb: number;
  readonly bytesPerSec: number;
  readonly monthlyUsd: number;
}

/** Monthly cost of a leg carrying `bytesPerSec` (30 days) at `usdPerGb`. */
export function legRow(
  from: string,
  to: string,
  usdPerGb: number,
  bytesPerSec: number,
  who?: { volume: string; senders: readonly string[]; receiver: string },
): LegRow {
  return { from, to, ...who, usdPerGb, bytesPerSec, monthlyUsd: legMonthlyCost(bytesPerSec, usdPerGb) };
}

/** `a–b` for a lost range after `cut` up to `acked`, or "none". */
export function lostRange(cut: number | null, acked: number): string {
  const from = (cut ?? 0) + 1;
  return from > acked ? "none" : `${from}–${acked}`;
}

function pad(cells: string[][]): string {
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** The scenario table as aligned text. */
export function formatScenarioTable(rows: readonly ScenarioRow[]): string {
  const head = [
    "scenario",
    "req",
    "predicted cut",
    "recovered cut",
    "lost range",
    "RPO (seq/bytes/age)",
    "RTO est",
    "RTO measured",
  ];
  const body = rows.map((r) => [
    r.scenario,
    r.required ? "yes" : "no",
    r.predictedCut === null ? "nothing" : `#${r.predictedCut}`,
    r.observedCut === undefined ? "(not played)" : r.observedCut === null ? "nothing" : `#${r.observedCut}`,
    r.lostRange,
    `${r.rpoSeqs} / ${r.rpoBytes} B / ${Math.round(r.rpoAgeMs)} ms`,
    r.rtoEstimateSec === null ? "unbounded" : `${r.rtoEstimateSec.toFixed(2)} s`,
    r.rtoMeasuredSec === undefined ? "-" : `${r.rtoMeasuredSec.toFixed(2)} s`,
  ]);
  return pad([head, ...body]);
}

/** The cost table as aligned text. */
export function formatCostTable(legs: readonly LegRow[]): string {
  const head = ["volume", "leg", "sites", "$/GB", "carried while streaming", "monthly (30 d)"];
  const body = legs.map((l) => [
    l.volume ?? "",
    l.senders === undefined ? "" : `${l.senders.join(", ")} -> ${l.receiver}`,
    `${l.from} -> ${l.to}`,
    l.usdPerGb.toFixed(3),
    `${(l.bytesPerSec / 1000).toFixed(1)} kB/s`,
    `$${l.monthlyUsd.toFixed(2)}`,
  ]);
  const total = legs.reduce((n, l) => n + l.monthlyUsd, 0);
  return pad([head, ...body, ["total", "", "", "", "", `$${total.toFixed(2)}`]]);
}

/** One strike outcome for the side-by-side table. */
export interface StrikeRow {
  readonly run: string;
  readonly volume: string;
  readonly acknowledged: number;
  readonly predictedCut: number | null;
  readonly recoveredCut: number;
  readonly cutAtStrike: number | null;
}

/** Predicted vs observed loss of the strike, volume by volume (with and without the waypoint). */
export function formatStrikeTable(rows: readonly StrikeRow[]): string {
  const head = [
    "custody path",
    "volume",
    "acked",
    "predicted cut",
    "recovered cut",
    "predicted loss",
    "observed loss",
    "match",
    "cut at strike (receipts in flight)",
  ];
  const body = rows.map((r) => [
    r.run,
    r.volume,
    `#${r.acknowledged}`,
    r.predictedCut === null ? "nothing" : `#${r.predictedCut}`,
    `#${r.recoveredCut}`,
    lostRange(r.predictedCut, r.acknowledged),
    lostRange(r.recoveredCut, r.acknowledged),
    r.predictedCut === r.recoveredCut ? "exact" : "MISMATCH",
    r.cutAtStrike === null ? "nothing" : `#${r.cutAtStrike}`,
  ]);
  return pad([head, ...body]);
}
