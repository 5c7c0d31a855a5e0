import type { NatsConnection } from "@nats-io/transport-node";
import { errors as natsErrors } from "@nats-io/transport-node";
import { CustodyError } from "../core/index.ts";

/**
 * Thrown when opening a region's control log failed for a reason of the bus, not of the log (the
 * JetStream API did not answer in time, JetStream is not enabled, the connection closed): it names
 * the region, the stream, the server asked and what went wrong, where nats.js says only `timeout`.
 * The nats.js error is its `cause`.
 */
export class ControlLogUnreachableError extends CustodyError {
  constructor(region: string, streamName: string, server: string, why: string, options?: { cause?: unknown }) {
    super(
      "control_log_unreachable",
      `control log ${region} (stream ${streamName}) via ${server}: ${why}`,
      { region, streamName, server },
      options,
    );
  }
}

/** What went wrong, said for an operator: a timeout names how long was waited and what to check. */
function whyUnreachable(err: unknown, timeoutMs: number): string {
  const timedOut =
    err instanceof natsErrors.TimeoutError || (err instanceof Error && err.cause instanceof natsErrors.TimeoutError);
  if (timedOut)
    return (
      `JetStream did not answer within ${timeoutMs} ms (is JetStream enabled there, and does the stream have a ` +
      `leader?)`
    );
  return err instanceof Error ? err.message : String(err);
}

/**
 * Runs `open` (the opening of `region`'s control stream on `nc`); a failure that is not already a
 * typed one (missing stream, placement) becomes ControlLogUnreachableError naming where it happened.
 */
export async function openNamingFailure<T>(
  nc: NatsConnection,
  region: string,
  streamName: string,
  timeoutMs: number,
  open: () => Promise<T>,
): Promise<T> {
  try {
    return await open();
  } catch (err) {
    if (err instanceof CustodyError) throw err;
    throw new ControlLogUnreachableError(region, streamName, nc.getServer(), whyUnreachable(err, timeoutMs), {
      cause: err,
    });
  }
}
