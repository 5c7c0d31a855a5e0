import { createHash, type Hash } from "node:crypto";

/** One entry of a run's trace: virtual time, what happened, who, and a few details. */
export interface TraceEvent {
  readonly atMs: number;
  readonly kind: string;
  readonly actor: string;
  readonly detail?: Readonly<Record<string, unknown>>;
}

/**
 * The compact event trace of a run and its running hash. Every event (including network
 * deliveries, which are hashed but not kept) feeds `hash`, so two runs with equal hashes took the
 * same steps in the same order at the same virtual times.
 */
export class EventTrace {
  readonly events: TraceEvent[] = [];
  #hash: Hash = createHash("sha256");
  // Lines not yet fed to the hash: one update per ~64 KiB instead of one native call per event.
  // SHA-256 of the concatenation is the same whatever the chunking, so the trace hash is unchanged.
  #pending = "";
  #count = 0;

  constructor(private readonly keep = 5_000) {}

  /** Records an event (kept while fewer than `keep` are stored; always hashed). */
  record(e: TraceEvent): void {
    this.hashOnly(e);
    if (this.events.length < this.keep) this.events.push(e);
  }

  /** Feeds an event into the hash without keeping it (high-volume events such as deliveries). */
  hashOnly(e: TraceEvent): void {
    this.#feed(`${e.atMs}|${e.kind}|${e.actor}|${e.detail === undefined ? "" : JSON.stringify(e.detail)}\n`);
  }

  /** Hashes a network event cheaply (no object, no JSON): the hot path of every run. */
  hashNet(atMs: number, kind: string, from: string, to: string, subject: string): void {
    this.#feed(`${atMs}|${kind}|${from}|${to}|${subject}\n`);
  }

  #feed(line: string): void {
    this.#count++;
    this.#pending += line;
    if (this.#pending.length >= 65_536) this.#flush();
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    this.#hash.update(this.#pending);
    this.#pending = "";
  }

  /** Number of events hashed so far. */
  get count(): number {
    return this.#count;
  }

  /** Hex SHA-256 of every event so far (the trace hash). */
  digest(): string {
    this.#flush();
    return this.#hash.copy().digest("hex");
  }
}

/** One line per event, for CLI output. */
export function formatTraceEvent(e: TraceEvent): string {
  const t = (e.atMs / 1000).toFixed(3).padStart(9);
  return `${t}s  ${e.kind.padEnd(18)} ${e.actor.padEnd(8)} ${e.detail === undefined ? "" : JSON.stringify(e.detail)}`;
}
