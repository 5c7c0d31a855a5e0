import { CustodyError } from "../core/index.ts";
import { cliIo } from "./cli-io.ts";

/** Thrown (as the abort reason) when SIGINT or SIGTERM stops a command that cleans up after itself. */
export class InterruptedError extends CustodyError {
  constructor(signal: NodeJS.Signals, what: string) {
    super("interrupted", `${signal} received: ${what}`, { signal });
  }
}

/**
 * Runs `fn` with an AbortSignal that SIGINT and SIGTERM abort (with `interrupted(signal)` as the
 * reason), so the command stops at its next check, cleans up in its own `finally` blocks and ends
 * with one `error [interrupted]: …` line and exit code 1 instead of dying silently. A second
 * signal ends the process at once. When the signal was aborted, whatever `fn` threw on the way out
 * is replaced by the interruption. The handlers are removed when `fn` settles.
 */
export async function withInterrupt<T>(
  interrupted: (signal: NodeJS.Signals) => InterruptedError,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ac = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (!ac.signal.aborted) {
      ac.abort(interrupted(signal));
      return;
    }
    cliIo().stderr(`error [interrupted]: ${signal} received again: exiting without cleaning up\n`);
    process.exit(1);
  };
  process.on("SIGINT", onSignal).on("SIGTERM", onSignal);
  try {
    return await fn(ac.signal);
  } catch (err) {
    throw ac.signal.aborted ? ac.signal.reason : err;
  } finally {
    process.off("SIGINT", onSignal).off("SIGTERM", onSignal);
  }
}

/**
 * `p`, or the abort reason as soon as `signal` aborts (for waits that do not watch the signal
 * themselves). A value `p` resolves with after the abort is handed to `late` (to close it).
 */
export function interruptible<T>(signal: AbortSignal, p: Promise<T>, late?: (value: T) => void): Promise<T> {
  if (signal.aborted) {
    p.then(late, () => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) late?.(v);
        else resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err as Error);
      },
    );
  });
}
