/**
 * Named monotonic counters. Every rejected input is counted by its error code so operators (and
 * tests) can see what was refused without scraping logs.
 */
export class Counters {
  private readonly values = new Map<string, number>();

  /** Adds `by` (default 1) to counter `name`. */
  inc(name: string, by = 1): void {
    this.values.set(name, (this.values.get(name) ?? 0) + by);
  }

  /** Current value of `name` (0 when never incremented). */
  get(name: string): number {
    return this.values.get(name) ?? 0;
  }

  /** A plain-object copy, sorted by name, for status documents and JSON output. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.values.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }
}
