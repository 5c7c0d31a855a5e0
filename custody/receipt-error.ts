import { CustodyError } from "../core/index.ts";

/**
 * Why a receipt batch was refused. Callers and counters branch on these codes; every one of them
 * means "this batch changed nothing".
 */
export const ReceiptErrorCode = {
  /** The bytes are not a well-formed, canonical v1 receipt batch. */
  malformed: "malformed",
  /** The batch or a receipt declares a version this peer does not implement. */
  unsupported_version: "unsupported_version",
  /** The signature does not verify under the admitted key of the claimed holder incarnation. */
  bad_signature: "bad_signature",
  /** The batch is bound to another volume, lane or receipt subject than the one it arrived on. */
  wrong_stream: "wrong_stream",
  /** No public key is admitted for the claimed holder incarnation. */
  unknown_holder_key: "unknown_holder_key",
  /** The holder has since been re-admitted under a newer incarnation. */
  stale_incarnation: "stale_incarnation",
  /** A newer incarnation than the one admitted: it counts once the control log admits it. */
  unadmitted_incarnation: "unadmitted_incarnation",
  /** A receipt was issued under an older topology epoch than the verifier's. */
  stale_epoch: "stale_epoch",
  /** A receipt was issued under an older policy generation than the verifier's. */
  stale_generation: "stale_generation",
  /** A receipt names an epoch or generation the verifier has not committed yet. */
  ahead_of_verifier: "ahead_of_verifier",
  /** Residency evidence or a required extension of a kind this peer does not understand. */
  unsupported_evidence: "unsupported_evidence",
  /** A receipt claims to retain ranges that the control log has already released for it. */
  range_regression: "range_regression",
  /** Two different receipts carry the same holder receipt sequence (equivocation). */
  conflicting_receipt: "conflicting_receipt",
} as const;
export type ReceiptErrorCode = (typeof ReceiptErrorCode)[keyof typeof ReceiptErrorCode];

/** A refused receipt batch. `code` is stable; `detail` names the offending holder/field/value. */
export class ReceiptError extends CustodyError {
  declare readonly code: ReceiptErrorCode;

  constructor(
    code: ReceiptErrorCode,
    message: string,
    detail: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, detail, options);
  }
}
