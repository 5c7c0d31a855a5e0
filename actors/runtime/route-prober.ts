import { createActor, fromPromise, setup, type Actor } from "xstate";
import { Counters, type Clock } from "../../core/index.ts";
import { PathEstimate, planProbeRound, type ProbeShape } from "../../policies/index.ts";
import {
  encodeMessage,
  ProbePhase,
  routeMeasurementsSpec,
  routeProbeSpec,
  routeSubject,
  type RouteMeasurements,
} from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import { RouteProbeEndpoint } from "./route-probe-endpoint.ts";
import type { UnitTrafficMeter } from "./unit-traffic-meter.ts";

/** What a process probes, how often, and within which budget. */
export interface RouteProberOptions {
  readonly self: string;
  readonly site: string;
  /** The peers at the other end of this process's edges, with their sites. */
  readonly peers: Readonly<Record<string, { readonly site: string }>>;
  readonly intervalMs: number;
  /** Bytes of probes (pings and bursts) this process sends per interval, all peers together. */
  readonly budgetBytesPerInterval: number;
  /** Pings per peer per round. Default 5. */
  readonly pings?: number;
  /** Encoded size of one burst frame (bytes). Default 16384. */
  readonly frameBytes?: number;
  /** How long a ping's answer is waited for (ms); a burst's ack gets this plus one interval. Default 2000. */
  readonly timeoutMs?: number;
}

/**
 * What the prober runs on: the transport it sends through (shaped in demos), its clock and, optionally, its unit meter.
 */
export interface RouteProberPorts {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly counters?: Counters;
  readonly meter?: UnitTrafficMeter;
}

/** One peer's newest measurement, on this process's clock. */
interface Measured {
  readonly toSite: string;
  readonly rttMs: number;
  readonly jitterMs: number;
  readonly throughputBytesPerSec: number | null;
  readonly samples: number;
  readonly atMs: number;
}

const BIG = Number.MAX_SAFE_INTEGER;

/** Probe rounds every interval: `probing` runs one round and publishes, `waiting` sleeps on the clock. */
const proberMachine = setup({
  types: {
    input: {} as { prober: RouteProber; intervalMs: number },
    context: {} as { prober: RouteProber; intervalMs: number },
  },
  actors: {
    round: fromPromise<RouteMeasurements, { prober: RouteProber }>(async ({ input }) => input.prober.probeOnce()),
  },
  delays: { interval: ({ context }) => context.intervalMs },
}).createMachine({
  id: "route-prober",
  context: ({ input }) => ({ ...input }),
  initial: "probing",
  states: {
    probing: {
      invoke: {
        src: "round",
        input: ({ context }) => ({ prober: context.prober }),
        onDone: "waiting",
        onError: "waiting",
      },
    },
    waiting: { after: { interval: "probing" } },
  },
});

/**
 * Measures this process's edges over NATS and publishes what it found on
 * `custody.v1.route.<self>`: per peer, RTT and jitter from small pings, sustained throughput from
 * a bounded burst (the whole round stays within `budgetBytesPerInterval`), and the unit bytes per
 * second this process sent to the peer (its steady load). A peer that answers no ping is left out.
 */
export class RouteProber {
  readonly endpoint: RouteProbeEndpoint;
  readonly counters: Counters;
  private readonly latest = new Map<string, Measured>();
  private readonly estimates = new Map<string, PathEstimate>();
  private readonly shape: ProbeShape;
  private readonly pad: Uint8Array;
  private nonce = 0;
  private lastLoadAt: number;
  private actor: Actor<typeof proberMachine> | undefined;

  constructor(
    readonly opts: RouteProberOptions,
    private readonly ports: RouteProberPorts,
  ) {
    this.counters = ports.counters ?? new Counters();
    this.endpoint = new RouteProbeEndpoint(opts.self, ports.transport, ports.clock, this.counters);
    // Sizes are of real encodings with the largest numbers a round can carry: the plan's bound holds.
    const sized = (phase: ProbePhase, pad: Uint8Array) =>
      encodeMessage(routeProbeSpec, {
        from: opts.self,
        to: longestPeer(opts),
        phase,
        nonce: BIG,
        index: BIG,
        last: false,
        received: 0,
        pad,
      }).byteLength;
    const frameBytes = opts.frameBytes ?? 16_384;
    const overhead = sized(ProbePhase.burst, new Uint8Array(0)) + 4;
    this.pad = new Uint8Array(Math.max(0, frameBytes - overhead));
    this.shape = {
      pings: opts.pings ?? 5,
      pingBytes: sized(ProbePhase.ping, new Uint8Array(0)),
      frameBytes: sized(ProbePhase.burst, this.pad),
    };
    this.lastLoadAt = ports.clock.now();
  }

  /** Answers probes and starts probing every interval. */
  start(): void {
    this.endpoint.start();
    this.actor = createActor(proberMachine, {
      input: { prober: this, intervalMs: this.opts.intervalMs },
      clock: this.ports.clock,
    });
    this.actor.start();
  }

  /** Stops probing and answering. Idempotent. */
  stop(): void {
    this.actor?.stop();
    this.actor = undefined;
    this.endpoint.stop();
  }

  /** Runs one probe round over every peer, then publishes the measurements. Resolves with what it published. */
  async probeOnce(): Promise<RouteMeasurements> {
    const plan = planProbeRound(this.opts.budgetBytesPerInterval, Object.keys(this.opts.peers), this.shape);
    let probeBytes = 0;
    for (const p of plan) probeBytes += await this.probePeer(p.peer, p.pings, p.burstFrames);
    const now = this.ports.clock.now();
    const sent = this.ports.meter?.take() ?? new Map<string, number>();
    const seconds = Math.max(0.001, (now - this.lastLoadAt) / 1000);
    this.lastLoadAt = now;
    const routes = [...this.latest]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([to, m]) => ({
        to,
        toSite: m.toSite,
        rttMs: m.rttMs,
        jitterMs: m.jitterMs,
        throughputBytesPerSec: m.throughputBytesPerSec,
        loadBytesPerSec: (sent.get(to) ?? 0) / seconds,
        samples: m.samples,
        ageMs: Math.max(0, now - m.atMs),
      }));
    const body: RouteMeasurements = { from: this.opts.self, fromSite: this.opts.site, routes, probeBytes };
    this.ports.transport.publish(routeSubject(this.opts.self), encodeMessage(routeMeasurementsSpec, body));
    this.counters.inc("route_rounds");
    return body;
  }

  /** Pings then bursts one peer; returns the bytes sent. */
  private async probePeer(peer: string, pings: number, frames: number): Promise<number> {
    const { clock } = this.ports;
    const timeoutMs = this.opts.timeoutMs ?? 2_000;
    const rtts: number[] = [];
    let bytes = 0;
    for (let i = 0; i < pings; i++) {
      const nonce = ++this.nonce;
      const answer = this.endpoint.answer(peer, ProbePhase.pong, nonce, timeoutMs);
      const t0 = clock.now();
      this.endpoint.send(peer, ProbePhase.ping, nonce, i, true);
      bytes += this.shape.pingBytes;
      const a = await answer;
      if (a !== null) rtts.push(a.atMs - t0);
    }
    if (rtts.length === 0) {
      this.counters.inc("route_probe_unanswered");
      return bytes;
    }
    let burst: { bytes: number; elapsedMs: number } | undefined;
    if (frames >= 2) {
      const nonce = ++this.nonce;
      const answer = this.endpoint.answer(peer, ProbePhase.burstAck, nonce, timeoutMs + this.opts.intervalMs);
      const t0 = clock.now();
      for (let j = 0; j < frames; j++) this.endpoint.send(peer, ProbePhase.burst, nonce, j, j === frames - 1, this.pad);
      bytes += frames * this.shape.frameBytes;
      const a = await answer;
      if (a !== null && a.probe.received > 0) burst = { bytes: a.probe.received, elapsedMs: a.atMs - t0 };
    }
    let estimate = this.estimates.get(peer);
    if (estimate === undefined) this.estimates.set(peer, (estimate = new PathEstimate()));
    const { rttMs, jitterMs, throughputBytesPerSec } = estimate.addRound(rtts, burst);
    this.latest.set(peer, {
      toSite: this.opts.peers[peer]!.site,
      rttMs,
      jitterMs,
      throughputBytesPerSec,
      samples: rtts.length,
      atMs: clock.now(),
    });
    this.counters.inc("route_measured");
    return bytes;
  }
}

function longestPeer(opts: RouteProberOptions): string {
  return Object.keys(opts.peers).reduce((a, b) => (b.length > a.length ? b : a), opts.self);
}
