import type { RecoveryParams } from "./evaluation-state.ts";

/** The parts of the time to make a volume usable (or to repair coverage), in seconds. */
export interface RecoveryTime {
  readonly detectSec: number;
  readonly authorizeSec: number;
  readonly acquireCapacitySec: number;
  readonly transferSec: number;
  readonly persistSec: number;
  readonly validateSec: number;
  readonly missingBytes: number;
  readonly totalSec: number;
}

/** The fixed phases of a recovery or repair (everything but the transfer). */
export type RecoveryPhases = Omit<RecoveryParams, "destination">;

/**
 * The memo's budget: detect + authorize + acquire capacity + transfer + persist + validate. Pure.
 * `transferSec` is the caller's (it knows which sources and links carry the missing bytes).
 */
export function recoveryTime(p: RecoveryPhases, missingBytes: number, transferSec: number): RecoveryTime {
  const totalSec = p.detectSec + p.authorizeSec + p.acquireCapacitySec + transferSec + p.persistSec + p.validateSec;
  return {
    detectSec: p.detectSec,
    authorizeSec: p.authorizeSec,
    acquireCapacitySec: p.acquireCapacitySec,
    transferSec,
    persistSec: p.persistSec,
    validateSec: p.validateSec,
    missingBytes,
    totalSec,
  };
}
