import type { Clock, Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import {
  decodeMessage,
  encodeMessage,
  probeSubject,
  ProbePhase,
  routeProbeSpec,
  type RouteProbe,
} from "../../transport/protocol/index.ts";
import type { Transport, TransportSubscription } from "../../transport/index.ts";

const EMPTY = new Uint8Array(0);
/** Bursts being counted at once; past this the oldest is forgotten (bounded memory whatever peers send). */
const MAX_OPEN_BURSTS = 64;

/** An answer to one of our probes: what came back and when (on our clock). */
interface Waiter {
  resolve(answer: { probe: RouteProbe; atMs: number }): void;
}

/**
 * A process's probe endpoint on `custody.v1.probe.<self>` — the one subscription for both roles:
 * it answers other peers' probes (a ping gets a pong; a burst's bytes are counted, and its last
 * frame gets a burst-ack naming them) and hands the answers to our own probes to the round that
 * waits for them. Answers go out through `transport` (shaped like any other publish).
 */
export class RouteProbeEndpoint {
  private readonly waiting = new Map<string, Waiter>();
  private readonly bursts = new Map<string, number>();
  private sub: TransportSubscription | undefined;

  constructor(
    readonly self: string,
    private readonly transport: Transport,
    private readonly clock: Clock,
    private readonly counters: Counters,
  ) {}

  /** Subscribes. Idempotent. */
  start(): void {
    this.sub ??= this.transport.subscribe(probeSubject(this.self), (m) => this.handle(m.data));
  }

  /** Unsubscribes; rounds still waiting time out. */
  stop(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
  }

  /** Publishes one probe to `to`. */
  send(to: string, phase: ProbePhase, nonce: number, index: number, last: boolean, pad: Uint8Array = EMPTY): void {
    this.transport.publish(
      probeSubject(to),
      encodeMessage(routeProbeSpec, { from: this.self, to, phase, nonce, index, last, received: 0, pad }),
    );
  }

  /**
   * Resolves with the answer `phase`/`nonce` from `peer`, or null after `timeoutMs`. Register
   * before sending, so an answer cannot overtake the wait.
   */
  answer(
    peer: string,
    phase: ProbePhase,
    nonce: number,
    timeoutMs: number,
  ): Promise<{ probe: RouteProbe; atMs: number } | null> {
    const key = `${peer}|${phase}|${nonce}`;
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.waiting.delete(key);
        resolve(null);
      }, timeoutMs);
      this.waiting.set(key, {
        resolve: (a) => {
          this.clock.clearTimeout(timer);
          this.waiting.delete(key);
          resolve(a);
        },
      });
    });
  }

  private handle(data: Uint8Array): void {
    const atMs = this.clock.now();
    let p: RouteProbe;
    try {
      p = decodeMessage(routeProbeSpec, data);
      if (p.to !== this.self) throw new CustodyError("probe_misaddressed", "probe for another peer", { to: p.to });
    } catch (err) {
      this.counters.inc(`route_probe_${err instanceof CustodyError ? err.code : "invalid"}`);
      return;
    }
    switch (p.phase) {
      case ProbePhase.ping:
        this.counters.inc("route_probe_pings_answered");
        this.transport.publish(
          probeSubject(p.from),
          encodeMessage(routeProbeSpec, { ...p, from: this.self, to: p.from, phase: ProbePhase.pong, pad: EMPTY }),
        );
        return;
      case ProbePhase.burst: {
        const key = `${p.from}|${p.nonce}`;
        const got = (this.bursts.get(key) ?? 0) + data.byteLength;
        this.bursts.delete(key);
        if (!p.last) {
          this.bursts.set(key, got);
          if (this.bursts.size > MAX_OPEN_BURSTS) this.bursts.delete(this.bursts.keys().next().value!);
          return;
        }
        this.transport.publish(
          probeSubject(p.from),
          encodeMessage(routeProbeSpec, {
            from: this.self,
            to: p.from,
            phase: ProbePhase.burstAck,
            nonce: p.nonce,
            index: p.index,
            last: true,
            received: got,
            pad: EMPTY,
          }),
        );
        return;
      }
      default:
        this.waiting.get(`${p.from}|${p.phase}|${p.nonce}`)?.resolve({ probe: p, atMs });
    }
  }
}
