import type { Clock } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";

/** A misuse of the simulated clock (code `sim_clock`): going back in time, a runaway timer loop. */
export class SimClockError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super("sim_clock", message, detail);
  }
}

interface Timer {
  readonly id: number;
  readonly due: number;
  /** Insertion order: breaks ties between timers due at the same instant. */
  readonly seq: number;
  readonly fn: (...args: unknown[]) => void;
  readonly label: string | undefined;
}

/** Options of a SimulatedClock. */
export interface SimulatedClockOptions {
  /** Virtual time at creation (ms); default 0. */
  startMs?: number;
  /**
   * When true, the clock drives itself: whenever timers are pending it fires them one per macrotask
   * (setImmediate), so code that awaits real promises (e.g. the transport conformance suite) makes
   * progress without anyone calling `step()`. Microtasks run between two timers, like real time.
   */
  autoAdvance?: boolean;
  /** Called after each fired timer with its due time and label (for traces). */
  onFire?: (atMs: number, label: string | undefined) => void;
}

/**
 * Virtual time with one ordered timer queue. Timers fire in (due time, insertion order), so a run
 * is a pure function of what was scheduled. Implements `Clock` and XState's clock shape, so it can
 * be passed to `createActor(machine, { clock })`. Time only moves through step/advanceTo/advanceBy/
 * runUntilIdle (or the auto-advance pump).
 */
export class SimulatedClock implements Clock {
  #now: number;
  #seq = 0;
  #nextId = 1;
  #heap: Timer[] = [];
  /** Ids scheduled and neither fired nor cancelled; a cancelled timer stays in the heap until popped. */
  #pendingIds = new Set<number>();
  #fired = 0;
  #auto: boolean;
  #pumpScheduled = false;
  readonly #onFire: ((atMs: number, label: string | undefined) => void) | undefined;

  constructor(opts: SimulatedClockOptions = {}) {
    this.#now = opts.startMs ?? 0;
    this.#auto = opts.autoAdvance ?? false;
    this.#onFire = opts.onFire;
  }

  /** Current virtual time in ms. */
  now(): number {
    return this.#now;
  }

  /** Schedules `fn` at now + max(0, ms); returns a numeric id for clearTimeout. */
  setTimeout(fn: (...args: unknown[]) => void, timeoutMs: number): unknown {
    return this.schedule(fn, timeoutMs);
  }

  /** Like setTimeout, with a label that appears in `onFire` (traces). Returns the timer id. */
  schedule(fn: (...args: unknown[]) => void, delayMs: number, label?: string): number {
    const delay = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
    const t: Timer = { id: this.#nextId++, due: this.#now + delay, seq: this.#seq++, fn, label };
    this.#push(t);
    this.#pendingIds.add(t.id);
    if (this.#auto) this.#schedulePump();
    return t.id;
  }

  /** Cancels a pending timer; unknown or already fired ids are ignored. */
  clearTimeout(id: unknown): void {
    if (typeof id === "number") this.#pendingIds.delete(id);
  }

  /** Number of pending (not cancelled) timers. */
  get pending(): number {
    return this.#pendingIds.size;
  }

  /** Number of timers fired so far. */
  get fired(): number {
    return this.#fired;
  }

  /** Due time of the next pending timer, or undefined when idle. */
  nextDue(): number | undefined {
    this.#dropCancelledHead();
    return this.#heap[0]?.due;
  }

  /** Fires the next timer (moving time to its due time). Returns false when no timer is pending. */
  step(): boolean {
    this.#dropCancelledHead();
    const t = this.#pop();
    if (t === undefined) return false;
    this.#pendingIds.delete(t.id);
    this.#now = Math.max(this.#now, t.due);
    this.#fired++;
    t.fn();
    this.#onFire?.(this.#now, t.label);
    return true;
  }

  /**
   * Fires every timer due at or before `atMs` in order, then sets time to `atMs`. Throws SimClockError
   * for a past time.
   */
  advanceTo(atMs: number): void {
    if (atMs < this.#now)
      throw new SimClockError(`cannot move time back from ${this.#now} to ${atMs}`, { now: this.#now, atMs });
    for (;;) {
      const due = this.nextDue();
      if (due === undefined || due > atMs) break;
      this.step();
    }
    this.#now = atMs;
  }

  /** advanceTo(now + ms). */
  advanceBy(ms: number): void {
    this.advanceTo(this.#now + Math.max(0, ms));
  }

  /**
   * Fires timers until none is pending. Throws SimClockError after `maxSteps` (a timer that keeps
   * rescheduling itself would otherwise spin forever). Returns the number fired.
   */
  runUntilIdle(maxSteps = 1_000_000): number {
    let n = 0;
    while (this.step()) {
      if (++n >= maxSteps) throw new SimClockError(`still busy after ${maxSteps} timers`, { maxSteps, now: this.#now });
    }
    return n;
  }

  /** Turns the auto-advance pump on or off (see SimulatedClockOptions.autoAdvance). */
  setAutoAdvance(on: boolean): void {
    this.#auto = on;
    if (on && this.#pendingIds.size > 0) this.#schedulePump();
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    setImmediate(() => {
      this.#pumpScheduled = false;
      if (!this.#auto) return;
      // A few timers per macrotask keeps big bursts fast; promise callbacks run between macrotasks.
      for (let i = 0; i < 16 && this.step(); i++) {
        /* fire */
      }
      if (this.#pendingIds.size > 0) this.#schedulePump();
    });
  }

  #dropCancelledHead(): void {
    while (this.#heap.length > 0 && !this.#pendingIds.has(this.#heap[0]!.id)) this.#pop();
  }

  // Binary min-heap on (due, seq).
  #less(a: Timer, b: Timer): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  #push(t: Timer): void {
    const h = this.#heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #pop(): Timer | undefined {
    const h = this.#heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
