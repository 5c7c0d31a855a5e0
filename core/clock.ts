/**
 * The time seam. Actors and pure modules take a Clock instead of reading Date.now() or calling
 * setTimeout directly, so the simulator can run them in virtual time. The shape is a superset of
 * XState v5's `Clock` (setTimeout/clearTimeout), so the same object can be passed to
 * `createActor(machine, { clock })`.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch (wall time, or virtual time in the simulator). */
  now(): number;
  setTimeout(fn: (...args: unknown[]) => void, timeoutMs: number): unknown;
  clearTimeout(id: unknown): void;
}

/** The real clock of this process. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
};
