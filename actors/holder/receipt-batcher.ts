/**
 * When to flush a lane's receipt batch, pure. A batch collects units admitted since the last flush
 * and is due when it holds `maxUnits` units or its oldest unit has waited `maxDelayMs` (the seal
 * deadline that bounds acknowledgement latency). Only units that passed validation are ever noted,
 * so a receipt can never claim a rejected unit.
 */
export interface BatchPolicy {
  readonly maxUnits: number;
  readonly maxDelayMs: number;
}

interface OpenBatch<L> {
  units: number;
  openedAt: number;
  links: L[];
}

/** Per-lane receipt batching. `L` is whatever the caller links a receipt to (span contexts). */
export class ReceiptBatcher<L = unknown> {
  private readonly open = new Map<string, OpenBatch<L>>();

  constructor(private readonly policy: BatchPolicy) {}

  /**
   * Notes one admitted unit on `lane` at `now`. Returns true when that makes the lane's batch full
   * (the caller should flush at once).
   */
  noteAdmitted(lane: string, now: number, link?: L): boolean {
    let b = this.open.get(lane);
    if (b === undefined) {
      b = { units: 0, openedAt: now, links: [] };
      this.open.set(lane, b);
    }
    b.units++;
    if (link !== undefined) b.links.push(link);
    return b.units >= this.policy.maxUnits;
  }

  /** Lanes whose batch is full or whose delay has expired at `now`. */
  due(now: number): string[] {
    const out: string[] = [];
    for (const [lane, b] of this.open) {
      if (b.units >= this.policy.maxUnits || now - b.openedAt >= this.policy.maxDelayMs) out.push(lane);
    }
    return out;
  }

  /** The earliest time a currently open batch falls due, or undefined when nothing is pending. */
  nextDeadline(): number | undefined {
    let min: number | undefined;
    for (const b of this.open.values()) {
      const t = b.openedAt + this.policy.maxDelayMs;
      if (min === undefined || t < min) min = t;
    }
    return min;
  }

  /** Closes `lane`'s batch and returns what it covered (undefined when nothing was pending). */
  take(lane: string): { units: number; links: L[] } | undefined {
    const b = this.open.get(lane);
    if (b === undefined) return undefined;
    this.open.delete(lane);
    return { units: b.units, links: b.links };
  }

  /** True when any lane has admitted units not yet receipted. */
  get pending(): boolean {
    return this.open.size > 0;
  }
}
