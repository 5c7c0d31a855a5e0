import { CustodyError } from "../core/index.ts";

/** Why the fold refused a control event. A refused event changes no state. */
export const ControlFenceCode = {
  /** Prepared under an older topology epoch than the log's current one. */
  stale_epoch: "stale_epoch",
  /** Prepared under an older policy generation than the log's current one. */
  stale_generation: "stale_generation",
  /** Prepared under an epoch/generation the log never reached (a forged or confused controller). */
  fence_mismatch: "fence_mismatch",
  /** The event is not valid canonical bytes of a known type and version. */
  malformed: "malformed",
  unknown_holder: "unknown_holder",
  unknown_obligation: "unknown_obligation",
  unknown_transfer: "unknown_transfer",
  /** An obligation or transfer with this id already exists. */
  duplicate_id: "duplicate_id",
  /** Admission with an incarnation that is not newer than the admitted one. */
  stale_incarnation: "stale_incarnation",
  /** The holder is retired or declared failed and cannot take or back custody. */
  holder_not_active: "holder_not_active",
  /** The holder is not responsible for (all of) the ranges the event moves or releases. */
  not_responsible: "not_responsible",
  /** The ranges would come back to a holder that already released them. */
  released_range_reappears: "released_range_reappears",
  /** A release that relies on holders that do not (all) currently hold responsibility for the ranges. */
  release_not_covered: "release_not_covered",
  /** Retiring a holder that is still responsible for ranges. */
  holder_still_responsible: "holder_still_responsible",
  /** A policy change that does not advance the epoch or the generation. */
  policy_not_advancing: "policy_not_advancing",
  /** A transfer that is not in the state the event needs (already active). */
  transfer_state: "transfer_state",
  /** Ending a hold the log does not have. */
  unknown_hold: "unknown_hold",
  /** A release of ranges a PITR pin or a registered recovery holds at that holder. */
  range_held: "range_held",
  /** A signed log (readers hold a trust root) holds an entry without a signature: skipped. */
  unsigned_event: "unsigned_event",
  /** The entry's signature does not verify under its signer's key: skipped. */
  bad_signature: "bad_signature",
  /**
   * The signer is neither a trusted operator nor an admitted controller, or may not commit this event type, or is not
   * the event's named author: skipped.
   */
  signer_not_allowed: "signer_not_allowed",
  /** A signed log holds an entry whose bytes do not decode (junk from a principal with append rights): skipped. */
  unreadable_entry: "unreadable_entry",
  /**
   * A controller committed an event touching a volume (or an obligation, transfer, hold or holder of
   * one) it was not admitted for (`admit_controller` volumes), or touching every volume (a policy
   * change, a holder bound to no volume list) while admitted for some only: skipped.
   */
  not_authorized_for_volume: "not_authorized_for_volume",
  /** A transfer, release, obligation or persistence choice names a holder not bound to the event's volume. */
  holder_not_bound_to_volume: "holder_not_bound_to_volume",
  /** A failover whose term does not advance the lane's, or whose cut, old head and first sequence are out of order. */
  failover_order: "failover_order",
  /**
   * A controller committed an event touching a volume whose control lease another controller
   * holds (it was deposed, or never claimed), or renewed a lease it does not hold (see control-lease.ts).
   */
  not_lease_holder: "not_lease_holder",
  /** A lease claim whose term does not advance the volume's, or a renewal naming another term than the current one. */
  stale_term: "stale_term",
} as const;
export type ControlFenceCode = (typeof ControlFenceCode)[keyof typeof ControlFenceCode];

/** A control event the fold refused (fencing or an invalid transition). `detail` names the event and field. */
export class ControlFenceError extends CustodyError {
  declare readonly code: ControlFenceCode;
  constructor(
    code: ControlFenceCode,
    message: string,
    detail: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, detail, options);
  }
}

/**
 * An append lost an optimistic-concurrency race: the log's last sequence was not the one the
 * controller prepared against. Re-read, re-fold, re-evaluate, and only then try again.
 */
export class ControlConflictError extends CustodyError {
  declare readonly code: "control_conflict";
  constructor(
    message: string,
    detail: { expectedLastSeq: number; actualLastSeq?: number; region?: string },
    options?: { cause?: unknown },
  ) {
    super("control_conflict", message, detail, options);
  }
}

/** Why a control log may not be trusted. */
export const ControlLogRegressionCode = {
  /** The log ends before a head this reader has already seen (lost acknowledged events). */
  log_regression: "log_regression",
  /** The log holds a different event at a sequence whose hash this reader has already seen. */
  log_fork: "log_fork",
  /** An event does not name the hash of the event before it. */
  chain_broken: "chain_broken",
  /** An entry cannot be decoded (corrupt, or a version this reader does not implement). */
  unreadable_entry: "unreadable_entry",
  /**
   * A snapshot a reader must start from (the entries below it are gone) that no trusted operator
   * signed (unsigned, another signer, or a signature that does not verify at its position).
   */
  snapshot_forged: "snapshot_forged",
  /**
   * A snapshot whose content does not match its own hash or the sequence and head it claims, or,
   * signed by the operator, does not match the state this reader folded from the entries itself.
   */
  snapshot_mismatch: "snapshot_mismatch",
  /** A snapshot that covers less than the reader already folded (a stale snapshot or a rolled-back log). */
  snapshot_regressed: "snapshot_regressed",
} as const;
export type ControlLogRegressionCode = (typeof ControlLogRegressionCode)[keyof typeof ControlLogRegressionCode];

/**
 * The log went backwards, forked or has a broken hash chain. A reader that gets this keeps its
 * newer state and authorizes no release from the log it was shown.
 */
export class ControlLogRegressionError extends CustodyError {
  declare readonly code: ControlLogRegressionCode;
  constructor(code: ControlLogRegressionCode, message: string, detail: Record<string, unknown> = {}) {
    super(code, message, detail);
  }
}
