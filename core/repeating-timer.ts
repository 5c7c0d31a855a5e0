import type { Clock } from "./clock.ts";

/**
 * Runs `tick` every `everyMs` through the clock seam (so a simulated clock drives it), each run
 * scheduled after the previous one finished; stops for good once `stopped()` is true or `stop()`
 * is called.
 */
export class RepeatingTimer {
  private handle: unknown;

  constructor(
    private readonly clock: Clock,
    everyMs: number,
    tick: () => void,
    stopped: () => boolean,
  ) {
    const run = () => {
      this.handle = undefined;
      if (stopped()) return;
      tick();
      this.handle = clock.setTimeout(run, everyMs);
    };
    this.handle = clock.setTimeout(run, everyMs);
  }

  /** Cancels the next run. Idempotent. */
  stop(): void {
    if (this.handle !== undefined) this.clock.clearTimeout(this.handle);
  }
}
