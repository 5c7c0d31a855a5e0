/** The newest `capacity` durations (ms) of some repeated work, taken out by whoever reports them. */
export class DurationWindow {
  private readonly samples: number[] = [];

  constructor(private readonly capacity: number) {}

  /** Runs `fn` and records how long it took (also when it throws). */
  async time<T>(fn: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this.record(performance.now() - t0);
    }
  }

  /** Records one duration measured by the caller (work that spans several calls). */
  record(ms: number): void {
    this.samples.push(ms);
    if (this.samples.length > this.capacity) this.samples.splice(0, this.samples.length - this.capacity);
  }

  /** The durations recorded since the last call, oldest first. */
  take(): number[] {
    return this.samples.splice(0);
  }
}
