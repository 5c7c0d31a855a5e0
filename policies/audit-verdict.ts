import { timingSafeEqual } from "node:crypto";
import type { RangeSet } from "../lanes/index.ts";
import { auditDigest, type AuditedUnit } from "./audit-digest.ts";

/**
 * The verdict of one retention audit. The controller cannot check a keyed digest against the
 * unit digests receipts state (the key is fresh), so it recomputes the digest from the same units
 * fetched from a different holder and compares. Pure.
 */

/** What came of one audit, as an enumeration. */
export const AuditOutcome = {
  /** The answer matched the digest recomputed from the reference's bytes. */
  Passed: "passed",
  /** The answer was wrong, or left out sequences the holder still claims. */
  Failed: "failed",
  /** No answer within the timeout (missing or late). */
  Timeout: "timeout",
  /** Nothing could be judged: the reference lacked the units, or the holder no longer claims any of them. */
  Void: "void",
} as const;
export type AuditOutcome = (typeof AuditOutcome)[keyof typeof AuditOutcome];

/** A holder's answer: the keyed digest and which challenged sequences it covers. */
export interface AuditAnswer {
  readonly digest: Uint8Array;
  readonly covered: RangeSet;
}

/** What the verdict is decided on. */
export interface AuditVerdictInput {
  readonly nonce: Uint8Array;
  readonly challenged: RangeSet;
  /** Undefined when the holder did not answer in time. */
  readonly answer: AuditAnswer | undefined;
  /** The same units as read from the reference holder. */
  readonly referenceUnits: readonly AuditedUnit[];
  /** What the audited holder still claims now (its newest receipts, minus what the log released). */
  readonly stillClaimed: RangeSet;
}

/** The outcome and, unless passed, why. */
export interface AuditVerdict {
  readonly outcome: AuditOutcome;
  readonly reason?: string;
}

/**
 * Judges one audit. A holder is accountable for what it still claims: sequences it left out are
 * excused only if it claims them no more (released or moved since the challenge). Pure.
 */
export function auditVerdict(i: AuditVerdictInput): AuditVerdict {
  const a = i.answer;
  if (a === undefined) return { outcome: AuditOutcome.Timeout, reason: "no answer in time" };
  if (!i.challenged.coversAll(a.covered))
    return { outcome: AuditOutcome.Failed, reason: "answer covers sequences not challenged" };
  const missing = i.challenged.subtract(a.covered);
  if (missing.intersects(i.stillClaimed))
    return {
      outcome: AuditOutcome.Failed,
      reason: `left out claimed sequences ${missing.intersect(i.stillClaimed).toString()}`,
    };
  if (a.covered.isEmpty) return { outcome: AuditOutcome.Void, reason: "no challenged sequence is claimed any more" };
  const expected = auditDigest(i.nonce, i.referenceUnits, a.covered);
  if (!expected.covered.equals(a.covered))
    return { outcome: AuditOutcome.Void, reason: "reference lacks some of the units" };
  const same = a.digest.byteLength === expected.digest.byteLength && timingSafeEqual(a.digest, expected.digest);
  return same ? { outcome: AuditOutcome.Passed } : { outcome: AuditOutcome.Failed, reason: "digest mismatch" };
}
