import { effectiveDrainBytesPerSec } from "../../policies/protected-ram.ts";
import type { ProtectedRamEvidence } from "./holder-config.ts";

/**
 * Protected-RAM admission, pure. Memo 004's bound: a holder may call queued bytes protected only
 * while
 *   detection + queued / drain throughput + persistence completion + margin < usable hold-up time
 * holds, the evidence is fresh, the battery is healthy and an autonomous preservation path exists.
 * A software copy started after noticing a failure is not such a path.
 */

/** Why protected receipts are (not) allowed. `ok` is the only status that allows them. */
export const ProtectionStatus = {
  Ok: "ok",
  BoundExceeded: "bound_exceeded",
  StaleEvidence: "stale_evidence",
  BatteryDegraded: "battery_degraded",
  NoAutonomousPath: "no_autonomous_path",
  CapacityExceeded: "capacity_exceeded",
} as const;
export type ProtectionStatus = (typeof ProtectionStatus)[keyof typeof ProtectionStatus];

/** Milliseconds needed to preserve `queuedBytes` after a power event, per the memo's bound. */
export function preservationTimeMs(e: ProtectedRamEvidence, queuedBytes: number): number {
  return e.detectionMs + (queuedBytes * 1000) / drainRate(e) + e.persistenceCompletionMs + e.marginMs;
}

/** The drain rate the bound counts on: the host's own, or its share of a drain target it shares. */
function drainRate(e: ProtectedRamEvidence): number {
  return effectiveDrainBytesPerSec(e.drainBytesPerSec, e.sharedDrain);
}

/**
 * Judges whether `queuedBytes` may be receipted as protected RAM at time `now`. Guarantees `ok` only
 * when every condition holds; the first failing condition is returned otherwise.
 */
export function protectionStatus(
  e: ProtectedRamEvidence,
  queuedBytes: number,
  now: number,
  opts: { maxEvidenceAgeMs: number; minBatteryHealth: number },
): ProtectionStatus {
  if (!e.autonomousPreservation) return ProtectionStatus.NoAutonomousPath;
  if (now - e.measuredAt > opts.maxEvidenceAgeMs) return ProtectionStatus.StaleEvidence;
  if (e.batteryHealth < opts.minBatteryHealth) return ProtectionStatus.BatteryDegraded;
  if (queuedBytes > e.protectedBytes) return ProtectionStatus.CapacityExceeded;
  if (!(preservationTimeMs(e, queuedBytes) < e.holdUpMs)) return ProtectionStatus.BoundExceeded;
  return ProtectionStatus.Ok;
}

/**
 * The largest queue (bytes) the bound admits: what a holder may accept as protected before it must
 * stop issuing protected receipts. 0 when even an empty queue fails the bound.
 */
export function protectedAdmissionLimit(e: ProtectedRamEvidence): number {
  const slackMs = e.holdUpMs - e.detectionMs - e.persistenceCompletionMs - e.marginMs;
  if (slackMs <= 0) return 0;
  // Strict inequality in the bound: stay one byte under the exact limit.
  const exact = Math.floor((slackMs * drainRate(e)) / 1000);
  return Math.max(0, Math.min(e.protectedBytes, exact - 1));
}

/**
 * Whether an evacuation of `bytes` at `evacuationBytesPerSec` finishes while protection still holds
 * (`holdUpRemainingMs`). False means coverage will be lost and a contract violation must be reported.
 */
export function evacuationFits(bytes: number, evacuationBytesPerSec: number, holdUpRemainingMs: number): boolean {
  if (bytes === 0) return true;
  if (evacuationBytesPerSec <= 0) return false;
  return (bytes * 1000) / evacuationBytesPerSec < holdUpRemainingMs;
}
