import { recoveryTime, type RecoveryPhases, type RecoveryTime } from "../../policies/index.ts";

/** The memo's repair budget, in seconds, split by phase (the same shape as a recovery's). */
export type RepairEstimate = RecoveryTime;

/**
 * repair time = detect + authorize + acquire capacity + missing bytes / repair bandwidth + persist
 * + validate. Pure. A zero or negative bandwidth makes the transfer (and the total) infinite.
 */
export function repairEstimate(p: RecoveryPhases, missingBytes: number, bandwidthBytesPerSec: number): RepairEstimate {
  const transferSec =
    missingBytes === 0 ? 0 : bandwidthBytesPerSec > 0 ? missingBytes / bandwidthBytesPerSec : Infinity;
  return recoveryTime(p, missingBytes, transferSec);
}
