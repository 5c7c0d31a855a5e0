import type { Random } from "../core/index.ts";
import { Counters } from "../core/index.ts";
import type {
  InboundMessage,
  MessageHandler,
  MessageHeaders,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
  Transport,
  TransportSubscription,
} from "../transport/index.ts";
import { TransportError, TransportErrorCode } from "../transport/index.ts";
import type { SimulatedClock } from "./simulated-clock.ts";
import { isPublishSubject, isSubscribeSubject, subjectMatches, tokensMatch } from "./subject-match.ts";

/** How one directed site→site edge behaves. Probabilities are per delivery. */
export interface EdgeProfile {
  /** One-way propagation delay. */
  readonly latencyMs: number;
  /** Extra delay drawn uniformly from [0, jitterMs]; FIFO order per channel is kept anyway. */
  readonly jitterMs: number;
  /** Serialization rate of the edge (0 = unlimited): a message occupies the edge for size/rate. */
  readonly bandwidthBytesPerSec: number;
  readonly loss: number;
  readonly duplicate: number;
  /** Chance a delivery skips the per-channel FIFO and takes up to `reorderWindowMs` extra. */
  readonly reorder: number;
  readonly reorderWindowMs: number;
}

/** An edge with no delay and no faults (the conformance configuration). */
export const PERFECT_EDGE: EdgeProfile = {
  latencyMs: 0,
  jitterMs: 0,
  bandwidthBytesPerSec: 0,
  loss: 0,
  duplicate: 0,
  reorder: 0,
  reorderWindowMs: 0,
};

/** What happened to a message on the simulated network (for traces and tests). */
export interface NetEvent {
  readonly atMs: number;
  readonly kind: "deliver" | "drop_loss" | "drop_partition" | "drop_down" | "duplicate" | "handler_error";
  readonly from: string;
  readonly to: string;
  readonly subject: string;
  readonly bytes: number;
}

/** Options of a SimNetwork. */
export interface SimNetworkOptions {
  readonly clock: SimulatedClock;
  /** The network's own stream (fork it from the world seed); every fault draw comes from it. */
  readonly random: Random;
  /** Profile of every edge not set with `setEdge` (default PERFECT_EDGE). */
  readonly defaultEdge?: Partial<EdgeProfile>;
  /** Observer of every delivery/drop, called synchronously in virtual-time order. */
  readonly onEvent?: (e: NetEvent) => void;
}

interface Sub {
  readonly id: number;
  readonly pattern: string;
  /** Pattern tokens when it has wildcards; undefined for a literal subject (compared as a string). */
  readonly tokens: readonly string[] | undefined;
  readonly queue: string | undefined;
  readonly endpoint: SimEndpoint;
  readonly handler: MessageHandler;
  active: boolean;
  draining: boolean;
  inFlight: number;
  drained: Array<() => void>;
  /** Latest scheduled FIFO arrival per publishing endpoint id (the channel publisher→this subscription). */
  readonly lastArrival: Map<number, number>;
}

/**
 * A deterministic in-memory message network. Each endpoint is a `Transport` at a site. Deliveries
 * are timers on the simulated clock; latency, jitter, bandwidth, loss, duplication, reordering and
 * partitions apply per directed site edge, with every draw from one Random. With PERFECT_EDGE it
 * behaves like core NATS (checked by the transport conformance suite).
 */
export class SimNetwork {
  readonly clock: SimulatedClock;
  readonly counters = new Counters();
  readonly #random: Random;
  readonly #defaultEdge: EdgeProfile;
  /** Edge profiles by source site, then destination site (no key string built per delivery). */
  readonly #edges = new Map<string, Map<string, EdgeProfile>>();
  /** When each directed site edge finishes serializing what it already carries: by source, then destination site. */
  readonly #busyUntil = new Map<string, Map<string, number>>();
  readonly #cuts = new Map<number, { a: ReadonlySet<string>; b: ReadonlySet<string> }>();
  readonly #endpoints = new Map<string, SimEndpoint>();
  readonly #onEvent: ((e: NetEvent) => void) | undefined;
  #subs: Sub[] = [];
  #nextSub = 1;
  #nextCut = 1;
  #nextEndpoint = 1;

  constructor(opts: SimNetworkOptions) {
    this.clock = opts.clock;
    this.#random = opts.random;
    this.#defaultEdge = { ...PERFECT_EDGE, ...opts.defaultEdge };
    this.#onEvent = opts.onEvent;
  }

  /** A new endpoint named `name` at `site`. Throws TransportError(failed) if a live endpoint has that name. */
  endpoint(name: string, site: string): SimEndpoint {
    const old = this.#endpoints.get(name);
    if (old !== undefined && !old.closed)
      throw new TransportError(TransportErrorCode.Failed, `endpoint "${name}" is already attached`, { name });
    const ep = new SimEndpoint(this, name, site, this.#nextEndpoint++);
    this.#endpoints.set(name, ep);
    return ep;
  }

  /** Sets the profile of the directed edge fromSite→toSite (fields not given keep the default). */
  setEdge(fromSite: string, toSite: string, profile: Partial<EdgeProfile>): void {
    let from = this.#edges.get(fromSite);
    if (from === undefined) this.#edges.set(fromSite, (from = new Map()));
    from.set(toSite, { ...this.#defaultEdge, ...profile });
  }

  /** The profile of fromSite→toSite. */
  edge(fromSite: string, toSite: string): EdgeProfile {
    return this.#edges.get(fromSite)?.get(toSite) ?? this.#defaultEdge;
  }

  /** Cuts every edge between a site in `a` and a site in `b` (both directions); returns the cut id for `heal`. */
  partition(a: Iterable<string>, b: Iterable<string>): number {
    const id = this.#nextCut++;
    this.#cuts.set(id, { a: new Set(a), b: new Set(b) });
    return id;
  }

  /** Removes one cut (unknown ids are ignored). */
  heal(id: number): void {
    this.#cuts.delete(id);
  }

  /** Removes every cut. */
  healAll(): void {
    this.#cuts.clear();
  }

  /** True when messages between the two sites are currently cut (either direction). */
  isCut(x: string, y: string): boolean {
    if (this.#cuts.size === 0) return false;
    for (const { a, b } of this.#cuts.values()) if ((a.has(x) && b.has(y)) || (a.has(y) && b.has(x))) return true;
    return false;
  }

  /**
   * Abruptly disconnects endpoint `name` (a process crash): its subscriptions vanish, messages in flight
   * to it are lost.
   */
  crash(name: string): void {
    this.#endpoints.get(name)?.abort();
  }

  /** True when some live subscription matches `subject`. */
  hasInterest(subject: string): boolean {
    return this.#subs.some((s) => s.active && !s.draining && subjectMatches(s.pattern, subject));
  }

  /** @internal Registers a subscription of `ep`. */
  addSub(ep: SimEndpoint, pattern: string, handler: MessageHandler, queue: string | undefined): Sub {
    const wild = pattern.includes("*") || pattern.includes(">");
    const sub: Sub = {
      id: this.#nextSub++,
      pattern,
      tokens: wild ? pattern.split(".") : undefined,
      queue,
      endpoint: ep,
      handler,
      active: true,
      draining: false,
      inFlight: 0,
      drained: [],
      lastArrival: new Map(),
    };
    this.#subs.push(sub);
    return sub;
  }

  /** @internal Removes a subscription. */
  removeSub(sub: Sub): void {
    sub.active = false;
    this.#subs = this.#subs.filter((s) => s !== sub);
    this.#settleDrain(sub);
  }

  /** @internal Routes one published message from `from` to every matching subscription. */
  route(
    from: SimEndpoint,
    subject: string,
    data: Uint8Array,
    headers: MessageHeaders,
    reply: string | undefined,
  ): void {
    const plain: Sub[] = [];
    const groups = new Map<string, Sub[]>();
    let stoks: string[] | undefined;
    for (const s of this.#subs) {
      if (!s.active || s.draining) continue;
      if (s.tokens === undefined ? s.pattern !== subject : !tokensMatch(s.tokens, (stoks ??= subject.split("."))))
        continue;
      if (s.queue === undefined) plain.push(s);
      else {
        const key = `${s.pattern}\u0000${s.queue}`;
        const g = groups.get(key);
        if (g) g.push(s);
        else groups.set(key, [s]);
      }
    }
    const targets = [...plain];
    for (const g of groups.values()) targets.push(this.#random.pick(g));
    for (const sub of targets) this.#send(from, sub, subject, data, headers, reply);
  }

  #send(
    from: SimEndpoint,
    sub: Sub,
    subject: string,
    data: Uint8Array,
    headers: MessageHeaders,
    reply: string | undefined,
  ): void {
    const to = sub.endpoint;
    const ev = (kind: NetEvent["kind"]) =>
      this.#event({ atMs: this.clock.now(), kind, from: from.name, to: to.name, subject, bytes: data.length });
    if (this.isCut(from.site, to.site)) {
      this.counters.inc("drop_partition");
      ev("drop_partition");
      return;
    }
    const e = this.edge(from.site, to.site);
    if (this.#random.chance(e.loss)) {
      this.counters.inc("drop_loss");
      ev("drop_loss");
      return;
    }
    const copies = this.#random.chance(e.duplicate) ? 2 : 1;
    if (copies === 2) {
      this.counters.inc("duplicate");
      ev("duplicate");
    }
    const now = this.clock.now();
    const serialization = e.bandwidthBytesPerSec > 0 ? (data.length * 1000) / e.bandwidthBytesPerSec : 0;
    let busy = this.#busyUntil.get(from.site);
    if (busy === undefined) this.#busyUntil.set(from.site, (busy = new Map()));
    const departs = Math.max(now, busy.get(to.site) ?? 0) + serialization;
    if (serialization > 0) busy.set(to.site, departs);
    for (let c = 0; c < copies; c++) {
      let arrival = departs + e.latencyMs + (e.jitterMs > 0 ? this.#random.next() * e.jitterMs : 0);
      if (e.reorder > 0 && this.#random.chance(e.reorder)) {
        arrival += this.#random.next() * e.reorderWindowMs; // may overtake or fall behind its neighbours
      } else {
        arrival = Math.max(arrival, sub.lastArrival.get(from.id) ?? 0); // FIFO per publisher→subscription
        sub.lastArrival.set(from.id, arrival);
      }
      const msg: InboundMessage = {
        subject,
        data: data.slice(),
        headers: { ...headers },
        ...(reply !== undefined ? { reply } : {}),
      };
      sub.inFlight++;
      from.outstanding++;
      this.clock.schedule(() => this.#deliver(from, sub, msg), arrival - now, "net");
    }
  }

  #deliver(from: SimEndpoint, sub: Sub, msg: InboundMessage): void {
    sub.inFlight--;
    from.settleOne();
    const to = sub.endpoint;
    const ev = (kind: NetEvent["kind"]) =>
      this.#event({
        atMs: this.clock.now(),
        kind,
        from: from.name,
        to: to.name,
        subject: msg.subject,
        bytes: msg.data.length,
      });
    if (!sub.active || to.closed) {
      this.counters.inc("drop_down");
      ev("drop_down");
    } else if (this.isCut(from.site, to.site)) {
      this.counters.inc("drop_partition"); // cut while in flight
      ev("drop_partition");
    } else {
      this.counters.inc("deliver");
      ev("deliver");
      try {
        sub.handler(msg);
      } catch {
        // A throwing handler is the subscriber's bug; delivery to others continues (as with NatsTransport).
        this.counters.inc("handler_error");
        ev("handler_error");
      }
    }
    this.#settleDrain(sub);
  }

  #settleDrain(sub: Sub): void {
    if ((sub.draining || !sub.active) && sub.inFlight === 0 && sub.drained.length > 0) {
      const waiters = sub.drained.splice(0);
      for (const w of waiters) w();
    }
  }

  /** @internal Begins draining: no new messages; resolves once those in flight were handled. */
  drainSub(sub: Sub): Promise<void> {
    sub.draining = true;
    return new Promise<void>((resolve) => {
      sub.drained.push(() => {
        this.removeSub(sub);
        resolve();
      });
      this.#settleDrain(sub);
    });
  }

  #event(e: NetEvent): void {
    this.#onEvent?.(e);
  }
}

/** One endpoint of a SimNetwork: a `Transport` at a site. Obtain it with `SimNetwork.endpoint`. */
export class SimEndpoint implements Transport {
  closed = false;
  /** Deliveries this endpoint published that have not yet arrived or been dropped. */
  outstanding = 0;
  readonly #subs = new Set<Sub>();
  readonly #flushWaiters: Array<() => void> = [];
  readonly #requests = new Set<(err: TransportError) => void>();
  #nextInbox = 1;

  constructor(
    private readonly net: SimNetwork,
    readonly name: string,
    readonly site: string,
    readonly id: number,
  ) {}

  /** Publishes `data` (copied per receiver). Throws TransportError (closed / invalid_subject). */
  publish(subject: string, data: Uint8Array, opts: PublishOptions = {}): void {
    this.#checkOpen(subject);
    if (!isPublishSubject(subject))
      throw new TransportError(TransportErrorCode.InvalidSubject, `invalid publish subject "${subject}"`, { subject });
    this.net.route(this, subject, data, opts.headers ?? {}, opts.reply);
  }

  /** Subscribes at once (in effect before this call returns). Throws TransportError (closed / invalid_subject). */
  subscribe(subject: string, handler: MessageHandler, opts: SubscribeOptions = {}): TransportSubscription {
    this.#checkOpen(subject);
    if (!isSubscribeSubject(subject) || (opts.queue !== undefined && !isPublishSubject(opts.queue))) {
      throw new TransportError(TransportErrorCode.InvalidSubject, `invalid subscription "${subject}"`, {
        subject,
        queue: opts.queue,
      });
    }
    const sub = this.net.addSub(this, subject, handler, opts.queue);
    this.#subs.add(sub);
    return {
      subject,
      unsubscribe: () => {
        if (!this.#subs.delete(sub)) return;
        this.net.removeSub(sub);
      },
      drain: async () => {
        if (!this.#subs.has(sub)) return;
        await this.net.drainSub(sub);
        this.#subs.delete(sub);
      },
    };
  }

  /** Request/reply in virtual time; rejects with TransportError closed / no_responders / timeout / failed. */
  request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage> {
    if (this.closed)
      return Promise.reject(new TransportError(TransportErrorCode.Closed, "transport is closed", { subject }));
    if (!isPublishSubject(subject))
      return Promise.reject(
        new TransportError(TransportErrorCode.InvalidSubject, `invalid request subject "${subject}"`, { subject }),
      );
    if (!this.net.hasInterest(subject))
      return Promise.reject(
        new TransportError(TransportErrorCode.NoResponders, `no responders on "${subject}"`, { subject }),
      );
    const inbox = `_INBOX.e${this.id}.${this.#nextInbox++}`;
    return new Promise<InboundMessage>((resolve, reject) => {
      let timer: unknown;
      const finish = (err: TransportError | undefined, msg?: InboundMessage) => {
        this.#requests.delete(fail);
        this.net.clock.clearTimeout(timer);
        sub.unsubscribe();
        if (err) reject(err);
        else resolve(msg!);
      };
      const fail = (err: TransportError) => finish(err);
      const sub = this.subscribe(inbox, (m) => finish(undefined, m));
      this.#requests.add(fail);
      timer = this.net.clock.setTimeout(
        () =>
          finish(
            new TransportError(
              TransportErrorCode.Timeout,
              `request on "${subject}" timed out after ${opts.timeoutMs} ms`,
              { subject },
            ),
          ),
        opts.timeoutMs,
      );
      this.publish(subject, data, { reply: inbox, ...(opts.headers ? { headers: opts.headers } : {}) });
    });
  }

  /** Replies to `msg` when it has a reply subject; a no-op otherwise (and after close). */
  respond(msg: InboundMessage, data: Uint8Array, opts: { headers?: MessageHeaders } = {}): void {
    if (msg.reply === undefined || this.closed) return;
    this.publish(msg.reply, data, opts.headers ? { headers: opts.headers } : {});
  }

  /** Resolves once every delivery this endpoint published so far arrived or was dropped (in virtual time). */
  flush(): Promise<void> {
    if (this.outstanding === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#flushWaiters.push(resolve));
  }

  /** Drains subscriptions, then closes. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.all([...this.#subs].map((s) => this.net.drainSub(s)));
    this.abort();
  }

  /** @internal Abrupt close (crash): subscriptions vanish, pending requests fail. */
  abort(): void {
    this.closed = true;
    for (const s of this.#subs) this.net.removeSub(s);
    this.#subs.clear();
    for (const fail of [...this.#requests])
      fail(new TransportError(TransportErrorCode.Failed, "endpoint disconnected", { name: this.name }));
    const waiters = this.#flushWaiters.splice(0);
    for (const w of waiters) w();
  }

  /** @internal One of this endpoint's deliveries arrived or was dropped. */
  settleOne(): void {
    this.outstanding--;
    if (this.outstanding === 0) {
      const waiters = this.#flushWaiters.splice(0);
      for (const w of waiters) w();
    }
  }

  #checkOpen(subject: string): void {
    if (this.closed)
      throw new TransportError(TransportErrorCode.Closed, "transport is closed", { subject, name: this.name });
  }
}
