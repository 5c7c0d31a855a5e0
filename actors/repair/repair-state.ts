import type { RecoveryParams } from "../../policies/index.ts";
import { RepairTimeoutError } from "./repair-errors.ts";
import { repairEstimate, type RepairEstimate } from "./repair-estimate.ts";
import type { ReplacementAdmission } from "./repair-port.ts";

/**
 * The repair task's data (issue #48): what its machine's context holds, plain and JSON-safe. The
 * ports it works through (RepairPort, Transport, Clock) never enter it: `repairMachineFor` gives
 * them to the invoked children. Times enter through the children's outputs, never from a clock.
 */

/** What a repair is and how it runs: its identity and settings (the machine's input). */
export interface RepairSettings {
  readonly repairId: string;
  readonly volume: string;
  readonly lanes: readonly string[];
  /** Holders the declare-failure event named (their coverage is what is missing). */
  readonly failed: readonly string[];
  readonly replacement: ReplacementAdmission;
  /** Bandwidth assumed for the estimate (bytes/s). */
  readonly repairBandwidthBytesPerSec: number;
  readonly receiptTimeoutMs?: number;
}

/** How long the replacement may take to receipt the copied ranges when the settings name no time (ms). */
export const DEFAULT_RECEIPT_TIMEOUT_MS = 10_000;

/** Lane → ranges, as `[first, last]` pairs (RangeSet's JSON form). */
export type LaneRanges = Record<string, [number, number][]>;

/** A replacement admission as JSON-safe data: its public key in base64. */
export interface ReplacementData {
  readonly holderId: string;
  readonly incarnation: number;
  readonly publicKey: string;
  readonly failureDomain: string;
}

/** The settings as the context holds them (the replacement's key as base64). */
export interface RepairTask extends Omit<RepairSettings, "replacement" | "lanes" | "failed"> {
  readonly lanes: string[];
  readonly failed: string[];
  readonly replacement: ReplacementData;
}

/** What a finished repair reports: measured time next to the policy estimate. */
export interface RepairReport {
  readonly repairId: string;
  readonly missing: LaneRanges;
  readonly copiedUnits: number;
  readonly copiedBytes: number;
  readonly measuredMs: number;
  readonly estimate: RepairEstimate;
  readonly controlSeq: number;
}

/** Why a repair failed: the step it was in and the error's code and message. */
export interface RepairFailure {
  readonly step: string;
  readonly code: string;
  readonly message: string;
}

/** How a repair task ended: exactly one of `report` and `failure`. */
export interface RepairOutcome {
  readonly repairId: string;
  readonly report?: RepairReport;
  readonly failure?: RepairFailure;
}

/** The repair machine's context: plain data only. */
export interface RepairContext {
  readonly task: RepairTask;
  /** When the survey began (the survey's output). */
  startedAt?: number;
  /** What the failed holders were still covering (the survey's output). */
  missing: LaneRanges;
  recovery?: RecoveryParams;
  copied: { units: number; bytes: number };
  /** The replacement's receipts must cover `missing` by then (set when the copy ends). */
  receiptsDueAt?: number;
  /** The last activation's control-log sequence and when activation ended. */
  finished?: { controlSeq: number; at: number };
  error?: RepairFailure;
}

/** The settings alone, whatever else the object carries (ports): what the machine is started with. */
export function repairSettingsOf(s: RepairSettings): RepairSettings {
  return {
    repairId: s.repairId,
    volume: s.volume,
    lanes: s.lanes,
    failed: s.failed,
    replacement: s.replacement,
    repairBandwidthBytesPerSec: s.repairBandwidthBytesPerSec,
    ...(s.receiptTimeoutMs !== undefined ? { receiptTimeoutMs: s.receiptTimeoutMs } : {}),
  };
}

export function replacementToData(a: ReplacementAdmission): ReplacementData {
  return {
    holderId: a.holderId,
    incarnation: a.incarnation,
    publicKey: Buffer.from(a.publicKey).toString("base64"),
    failureDomain: a.failureDomain,
  };
}

export function replacementFromData(d: ReplacementData): ReplacementAdmission {
  return { ...d, publicKey: new Uint8Array(Buffer.from(d.publicKey, "base64")) };
}

/** The context a repair starts with: its settings, nothing surveyed or copied yet. */
export function initialRepairContext(s: RepairSettings): RepairContext {
  const { replacement, lanes, failed, ...rest } = repairSettingsOf(s);
  return {
    task: { ...rest, lanes: [...lanes], failed: [...failed], replacement: replacementToData(replacement) },
    missing: {},
    copied: { units: 0, bytes: 0 },
  };
}

/** The failure an error thrown in `step` makes (its code, or `repair_failed`). Pure. */
export function failureOf(step: string, error: unknown): RepairFailure {
  const code = (error as { code?: unknown } | undefined)?.code;
  return {
    step,
    code: typeof code === "string" ? code : "repair_failed",
    message: error instanceof Error ? error.message : String(error),
  };
}

/** The failure of a repair whose replacement did not receipt the copy before `receiptsDueAt`. Pure. */
export function receiptTimeoutFailure(c: RepairContext): RepairFailure {
  const error = new RepairTimeoutError({ replacement: c.task.replacement.holderId, dueAt: c.receiptsDueAt });
  return failureOf("awaiting_receipts", error);
}

/** The report of a repair that activated its replacement; undefined before. Pure. */
export function repairReportOf(c: RepairContext): RepairReport | undefined {
  if (c.finished === undefined || c.startedAt === undefined || c.recovery === undefined) return undefined;
  return {
    repairId: c.task.repairId,
    missing: c.missing,
    copiedUnits: c.copied.units,
    copiedBytes: c.copied.bytes,
    measuredMs: c.finished.at - c.startedAt,
    estimate: repairEstimate(c.recovery, c.copied.bytes, c.task.repairBandwidthBytesPerSec),
    controlSeq: c.finished.controlSeq,
  };
}

/** The machine's output: the failure if one was recorded, else the report. Pure. */
export function repairOutcomeOf(c: RepairContext): RepairOutcome {
  const report = c.error === undefined ? repairReportOf(c) : undefined;
  return {
    repairId: c.task.repairId,
    ...(report !== undefined ? { report } : {}),
    ...(c.error !== undefined ? { failure: c.error } : {}),
  };
}
