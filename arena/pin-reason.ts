import { InvalidPinReasonError } from "./errors.ts";

/**
 * Why a segment must be kept. A segment returns to the pool only when every pin of every reason
 * has been released; spilling moves its residency to disk but keeps its pins.
 */
export const PinReason = {
  in_flight_forward: "in_flight_forward",
  custody_obligation: "custody_obligation",
  pitr_pin: "pitr_pin",
  recovery_in_progress: "recovery_in_progress",
} as const;
export type PinReason = (typeof PinReason)[keyof typeof PinReason];

/** All reasons in a fixed order (index into per-segment pin counters). */
export const PIN_REASONS: readonly PinReason[] = Object.values(PinReason);

/** Index of `reason` in PIN_REASONS. Throws InvalidPinReasonError for anything else. */
export function pinIndex(reason: unknown): number {
  const i = PIN_REASONS.indexOf(reason as PinReason);
  if (i < 0) throw new InvalidPinReasonError(reason);
  return i;
}

// Residency has one home, core/residency.ts; re-exported here for older importers.
export { Residency, type SegmentResidency } from "../core/index.ts";
