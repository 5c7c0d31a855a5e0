import { RangeSet } from "../lanes/index.ts";
import type { SimEndpoint, SimNetwork } from "./sim-network.ts";
import type { SimulatedClock } from "./simulated-clock.ts";
import type { EventTrace } from "./event-trace.ts";

/** What a model holder reports to the world's observer (for the invariant checks). */
export interface HolderObserver {
  /** A receiver issued `grant` (units it will accept in total) to `sender` during its incarnation `inc`. */
  grantIssued(receiver: string, sender: string, inc: number, grant: number): void;
  /** A holder sent a receipt claiming `claimed` while holding `held`. */
  receiptSent(holder: string, claimed: RangeSet, held: RangeSet): void;
  /** A receiver refused a unit beyond the credits it granted. */
  overCredit(receiver: string, sender: string): void;
}

/** Static configuration of a model holder (the writer is a holder with `writer` set). */
export interface ModelHolderConfig {
  readonly id: string;
  readonly site: string;
  readonly disk: boolean;
  readonly protectedRam: boolean;
  readonly downstream: readonly string[];
  readonly upstream: readonly string[];
  readonly creditWindow: number;
  readonly receiptMs: number;
  readonly retryMs: number;
  readonly flushMs: number;
  readonly restartMs: number;
  /** For the writer: a new acknowledged unit every `intervalMs`. */
  readonly writer?: { readonly intervalMs: number };
}

/** Sender-side state of one downstream edge (lives in RAM: lost on crash). */
interface DownEdge {
  inc: number;
  acked: RangeSet;
  sent: RangeSet;
  grant: number;
}

/** How long a receiver waits to coalesce credit grants (virtual ms). */
const ACK_DELAY_MS = 2;
const enc = new TextEncoder();
const dec = new TextDecoder();
const json = (v: unknown) => enc.encode(JSON.stringify(v));
const unjson = (b: Uint8Array) => JSON.parse(dec.decode(b)) as Record<string, unknown>;
const rs = (v: unknown) => RangeSet.fromJSON(v as [number, number][]);

/** Subjects of the model protocol (same shape as DESIGN.md's scheme). */
export const modelSubject = {
  unit: (to: string) => `custody.v1.unit.${to}.vol1.l0`,
  credit: (to: string) => `custody.v1.credit.${to}.vol1.l0`,
  receipt: () => "custody.v1.receipt.vol1.l0",
  release: (to: string) => `custody.v1.ctrl.release.${to}`,
} as const;

/**
 * A small model of a custody holder written against the pure modules (RangeSet): credited
 * admission, immediate fan-out to downstream edges within their credits, retransmission of
 * unacknowledged units, periodic disk flush, periodic receipts of what it holds, and releases
 * only on the controller's grant. Released ranges are durable and never re-admitted. RAM (and the
 * sender-side edge state) is lost on a crash unless it is protected RAM with valid evidence.
 */
export class ModelHolder {
  inc = 0;
  up = false;
  dead = false;
  ram = RangeSet.EMPTY;
  disk = RangeSet.EMPTY;
  released = RangeSet.EMPTY;
  evidenceValid: boolean;
  /** Writer only: next sequence to acknowledge (durable with the WAL). */
  nextSeq = 0;
  readonly down = new Map<string, DownEdge>();
  #received = new Map<string, RangeSet>();
  #creditDue = new Set<string>();
  /** Highest grant issued to each upstream in this incarnation. */
  #issued = new Map<string, number>();
  #endpoint: SimEndpoint | undefined;
  #life = 0;

  constructor(
    readonly cfg: ModelHolderConfig,
    private readonly clock: SimulatedClock,
    private readonly net: SimNetwork,
    private readonly trace: EventTrace,
    private readonly observer: HolderObserver,
  ) {
    this.evidenceValid = cfg.protectedRam;
  }

  get id(): string {
    return this.cfg.id;
  }

  /** Everything the holder physically has. */
  held(): RangeSet {
    return this.ram.union(this.disk);
  }

  /** Starts (or restarts) with a new incarnation: attaches to the network and starts its timers. */
  start(): void {
    if (this.dead) return;
    this.inc++;
    this.up = true;
    const life = ++this.#life;
    this.down.clear();
    for (const d of this.cfg.downstream)
      this.down.set(d, { inc: 0, acked: RangeSet.EMPTY, sent: RangeSet.EMPTY, grant: 0 });
    this.#received = new Map(this.cfg.upstream.map((u) => [u, RangeSet.EMPTY]));
    this.#issued = new Map();
    this.#creditDue = new Set();
    const ep = this.net.endpoint(this.id, this.cfg.site);
    this.#endpoint = ep;
    ep.subscribe(modelSubject.unit(this.id), (m) => this.#onUnit(unjson(m.data)));
    ep.subscribe(modelSubject.credit(this.id), (m) => this.#onCredit(unjson(m.data)));
    ep.subscribe(modelSubject.release(this.id), (m) => this.#onRelease(unjson(m.data)));
    this.trace.record({
      atMs: this.clock.now(),
      kind: "start",
      actor: this.id,
      detail: { inc: this.inc, held: this.held().toJSON() },
    });
    const every = (ms: number, label: string, fn: () => void) => {
      const tick = () => {
        if (this.#life !== life || !this.up) return;
        fn();
        this.clock.schedule(tick, ms, label);
      };
      this.clock.schedule(tick, ms, label);
    };
    every(this.cfg.receiptMs, "receipt", () => this.#sendReceipt());
    every(this.cfg.retryMs, "retry", () => this.#retry());
    if (this.cfg.disk) every(this.cfg.flushMs, "flush", () => this.#flush());
    if (this.cfg.writer) every(this.cfg.writer.intervalMs, "write", () => this.#write());
    for (const u of this.cfg.upstream) this.#sendCredit(u);
    this.#sendReceipt();
  }

  /**
   * A loss reaches this holder. `destroy` loses everything for good (no restart); otherwise RAM is
   * lost unless it is protected with valid evidence, disk is kept, and the holder restarts later.
   */
  fail(destroy: boolean): void {
    if (this.dead) return;
    if (this.up) this.net.crash(this.id);
    this.up = false;
    this.#life++;
    const keepRam = !destroy && this.cfg.protectedRam && this.evidenceValid;
    if (!keepRam) this.ram = RangeSet.EMPTY;
    if (destroy) {
      this.disk = RangeSet.EMPTY;
      this.dead = true;
    }
    this.trace.record({
      atMs: this.clock.now(),
      kind: destroy ? "destroyed" : "crashed",
      actor: this.id,
      detail: { kept: this.held().toJSON() },
    });
    if (!destroy) {
      const life = this.#life;
      this.clock.schedule(
        () => {
          if (this.#life === life && !this.dead) this.start();
        },
        this.cfg.restartMs,
        "restart",
      );
    }
  }

  /** Hold-up evidence fails (the holder notices and reports it in its next receipt). */
  degradeEvidence(): void {
    this.evidenceValid = false;
    this.trace.record({ atMs: this.clock.now(), kind: "evidence_degraded", actor: this.id });
  }

  #write(): void {
    const seq = this.nextSeq++;
    this.disk = this.disk.add(seq); // acknowledged only once its WAL record is durable
    this.trace.hashOnly({ atMs: this.clock.now(), kind: "write", actor: this.id, detail: { seq } });
    this.#pump();
  }

  #onUnit(m: Record<string, unknown>): void {
    const from = String(m.from);
    const seq = Number(m.seq);
    const got = this.#received.get(from);
    if (got === undefined) return; // not an upstream of ours
    if (!got.has(seq)) {
      if (got.count + 1 > (this.#issued.get(from) ?? 0)) {
        this.observer.overCredit(this.id, from);
        return;
      }
      this.#received.set(from, got.add(seq));
    }
    // Released ranges never come back, and a duplicate is only acknowledged.
    if (!this.released.has(seq) && !this.ram.has(seq) && !this.disk.has(seq)) this.ram = this.ram.add(seq);
    // Credits are coalesced: one grant per sender per `ackDelayMs`, not one per unit.
    if (!this.#creditDue.has(from)) {
      this.#creditDue.add(from);
      const life = this.#life;
      this.clock.schedule(
        () => {
          this.#creditDue.delete(from);
          if (this.#life === life && this.up) this.#sendCredit(from);
        },
        ACK_DELAY_MS,
        "credit",
      );
    }
    this.#pump();
  }

  #onCredit(m: Record<string, unknown>): void {
    const from = String(m.from);
    const d = this.down.get(from);
    if (d === undefined) return;
    const inc = Number(m.inc);
    const held = rs(m.held);
    const grant = Number(m.grant);
    if (inc > d.inc) this.down.set(from, { inc, acked: held, sent: RangeSet.EMPTY, grant });
    else if (inc === d.inc) {
      d.acked = d.acked.union(held);
      d.grant = Math.max(d.grant, grant);
    } else return;
    this.#pump();
  }

  #onRelease(m: Record<string, unknown>): void {
    const r = rs(m.ranges);
    this.ram = this.ram.subtract(r);
    this.disk = this.disk.subtract(r);
    this.released = this.released.union(r);
    this.trace.record({ atMs: this.clock.now(), kind: "released", actor: this.id, detail: { ranges: r.toJSON() } });
  }

  #sendCredit(to: string): void {
    const got = this.#received.get(to) ?? RangeSet.EMPTY;
    const grant = got.count + this.cfg.creditWindow;
    this.#issued.set(to, Math.max(this.#issued.get(to) ?? 0, grant));
    this.observer.grantIssued(this.id, to, this.inc, grant);
    this.#publish(modelSubject.credit(to), {
      from: this.id,
      inc: this.inc,
      held: this.held().union(this.released).toJSON(),
      grant,
    });
  }

  /** Sends new units to each downstream edge, lowest first, never beyond its credit. */
  #pump(): void {
    const have = this.held();
    for (const [to, d] of this.down) {
      if (d.inc === 0) continue; // no grant from this incarnation of the receiver yet
      let budget = d.grant - d.sent.count;
      if (budget <= 0) continue;
      const todo = have.subtract(d.acked).subtract(d.sent);
      const batch: Array<[number, number]> = [];
      for (const r of todo.ranges()) {
        const last = Math.min(r.last, r.first + budget - 1);
        for (let s = r.first; s <= last; s++) this.#publish(modelSubject.unit(to), { from: this.id, seq: s });
        batch.push([r.first, last]);
        budget -= last - r.first + 1;
        if (budget <= 0) break;
      }
      if (batch.length > 0) d.sent = d.sent.union(RangeSet.fromJSON(batch));
    }
  }

  #retry(): void {
    const have = this.held();
    for (const [to, d] of this.down) {
      const again = d.sent.subtract(d.acked).intersect(have);
      let n = 0;
      for (const r of again.ranges()) {
        for (let s = r.first; s <= r.last && n < this.cfg.creditWindow; s++, n++)
          this.#publish(modelSubject.unit(to), { from: this.id, seq: s });
      }
    }
    for (const u of this.cfg.upstream) this.#sendCredit(u); // keep-alive: lost credits are re-sent
    this.#pump();
  }

  #flush(): void {
    if (this.ram.isEmpty) return;
    this.disk = this.disk.union(this.ram);
    this.ram = RangeSet.EMPTY;
  }

  #sendReceipt(): void {
    let forwarded = this.held();
    for (const d of this.down.values()) forwarded = forwarded.intersect(d.acked);
    const claimed = this.held();
    this.observer.receiptSent(this.id, claimed, this.held());
    this.#publish(modelSubject.receipt(), {
      holder: this.id,
      inc: this.inc,
      at: this.clock.now(),
      ram: this.ram.toJSON(),
      disk: this.disk.toJSON(),
      protectedRamValid: this.cfg.protectedRam && this.evidenceValid,
      forwarded: forwarded.toJSON(),
      acked: this.nextSeq - 1,
    });
  }

  #publish(subject: string, body: unknown): void {
    if (!this.up || this.#endpoint === undefined || this.#endpoint.closed) return;
    this.#endpoint.publish(subject, json(body));
  }
}
