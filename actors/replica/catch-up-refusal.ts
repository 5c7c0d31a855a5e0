import { CustodyError } from "../../core/index.ts";

/**
 * Why the primary's catch-up service refused a request (the `code` of CatchUpRefusedError and of
 * `replica-catchup-refused`).
 */
export const CatchUpRefusal = {
  /** The asking replica is not one the primary was configured to serve. */
  NotConfigured: "catchup_not_configured",
  /** The request names another volume or replica than its subject, or another volume than the service's. */
  WrongTarget: "catchup_wrong_target",
  /** No such session: never opened, finished, or expired after being abandoned. */
  UnknownSession: "catchup_unknown_session",
  /** The cursor is past the session's last item. */
  BadCursor: "catchup_bad_cursor",
  /** Too many sessions are open; the replica asks again later. */
  Busy: "catchup_busy",
  /** A request of a kind the service does not answer (a well-formed envelope of another kind). */
  UnexpectedKind: "catchup_unexpected_kind",
  /** The primary's volume could not serve the read. */
  Failed: "catchup_failed",
} as const;
export type CatchUpRefusal = (typeof CatchUpRefusal)[keyof typeof CatchUpRefusal];

/**
 * A catch-up request the primary refused, or a refusal the replica received. `code` is a
 * CatchUpRefusal or, for a request that did not decode, the WireError code (`malformed`,
 * `invalid_field`, ...).
 */
export class CatchUpRefusedError extends CustodyError {
  constructor(code: string, message: string, detail: Record<string, unknown> = {}) {
    super(code, message, detail);
  }
}

/** A replica was asked to catch up while it was already catching up, or not serving. */
export class CatchUpUnavailableError extends CustodyError {
  constructor(reason: "in_progress" | "not_serving" | "stopped") {
    super(`catchup_${reason}`, `the replica cannot catch up now (${reason.replace("_", " ")})`, {});
  }
}
