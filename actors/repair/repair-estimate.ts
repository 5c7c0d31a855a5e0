import type { RecoveryParams } from "../../policies/evaluation-state.ts";

/** The memo's repair budget, in seconds, split by phase. */
export interface RepairEstimate {
  readonly detectSec: number;
  readonly authorizeSec: number;
  readonly acquireCapacitySec: number;
  readonly transferSec: number;
  readonly persistSec: number;
  readonly validateSec: number;
  readonly missingBytes: number;
  readonly totalSec: number;
}

/**
 * repair time = detect + authorize + acquire capacity + missing bytes / repair bandwidth + persist
 * + validate. Pure. A zero or negative bandwidth makes the transfer (and the total) infinite.
 */
export function repairEstimate(p: Omit<RecoveryParams, "destination">, missingBytes: number, bandwidthBytesPerSec: number): RepairEstimate {
  const transferSec = missingBytes === 0 ? 0 : bandwidthBytesPerSec > 0 ? missingBytes / bandwidthBytesPerSec : Infinity;
  const totalSec = p.detectSec + p.authorizeSec + p.acquireCapacitySec + transferSec + p.persistSec + p.validateSec;
  return { detectSec: p.detectSec, authorizeSec: p.authorizeSec, acquireCapacitySec: p.acquireCapacitySec, transferSec, persistSec: p.persistSec, validateSec: p.validateSec, missingBytes, totalSec };
}
