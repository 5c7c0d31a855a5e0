import { errors as natsErrors } from "@nats-io/transport-node";
import { CustodyError } from "../../core/index.ts";

/**
 * A role's start failed for a reason no typed error describes — most often a NATS request that got
 * no answer, which nats.js reports as a bare `timeout`. It names the role, its control log and the
 * server it was talking to; the original error is its `cause`.
 */
export class RoleStartError extends CustodyError {
  constructor(who: string, where: string, why: string, options?: { cause?: unknown }) {
    super("role_start_failed", `${who} did not start (${where}): ${why}`, { who, where }, options);
  }
}

/** `err` as the start failure of `who`, talking to `where`: a typed error is kept as it is. */
export function startFailure(err: unknown, who: string, where: string): unknown {
  if (err instanceof CustodyError) return err;
  const timedOut =
    err instanceof natsErrors.TimeoutError || (err instanceof Error && err.cause instanceof natsErrors.TimeoutError);
  const why = timedOut
    ? "a request to the server got no answer in time (nats.js: timeout): is the server up, with JetStream, and the " +
      "control log's stream led?"
    : err instanceof Error
      ? err.message
      : String(err);
  return new RoleStartError(who, where, why, { cause: err });
}
