import { JetStreamApiError } from "@nats-io/jetstream";
import { errors as natsErrors } from "@nats-io/transport-node";

/**
 * Whether a JetStream request on the control log failed because its stream has no leader for now
 * (a replicated log electing one after its leader's server was lost), not because of what was
 * asked: nobody answered the stream's subject ("no responders", which nats.js reports as
 * JetStreamNotEnabled), nobody answered in time, or the server said JetStream or the stream's
 * group is temporarily unavailable (HTTP-like status 503).
 *
 * Measured on nats-server 2.9.10 (three replicas, leader's server SIGKILLed): the in-flight
 * publish times out, the next ones get "no responders" until a new leader is elected (about 3-5 s).
 */
export function isControlLogUnavailable(err: unknown): boolean {
  const cause = err instanceof Error ? err.cause : undefined;
  if (err instanceof natsErrors.TimeoutError || cause instanceof natsErrors.TimeoutError) return true;
  if (err instanceof natsErrors.NoRespondersError || cause instanceof natsErrors.NoRespondersError) return true;
  if (
    (err instanceof natsErrors.RequestError && err.isNoResponders()) ||
    (cause instanceof natsErrors.RequestError && cause.isNoResponders())
  )
    return true;
  return err instanceof JetStreamApiError && err.status === 503;
}

/** Pause between attempts while the log is unavailable (ms): short, as an election takes seconds. */
const RETRY_PAUSE_MS = 250;

/**
 * Runs `attempt` again while it fails with an unavailable log (see `isControlLogUnavailable`),
 * until `budgetMs` has passed since the first try; then, or on any other error, throws the error.
 * `attempt` is told its number (1, 2, ...), so a retried write can check whether an earlier try stored it.
 */
export async function retryWhileUnavailable<T>(budgetMs: number, attempt: (n: number) => Promise<T>): Promise<T> {
  const until = Date.now() + budgetMs;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!isControlLogUnavailable(err) || Date.now() + RETRY_PAUSE_MS > until) throw err;
      await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
    }
  }
}
