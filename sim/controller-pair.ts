import {
  LeaseKeeper,
  startController,
  type Controller,
  type ControllerConfig,
  type ControllerPorts,
  type LeaseTimings,
} from "../actors/index.ts";
import { Counters } from "../core/index.ts";
import {
  ControlLogFollower,
  type ControlEvent,
  type ControlLogEntry,
  type ControlLogRecord,
  type ControlLogStore,
} from "../custody/index.ts";
import type {
  InboundMessage,
  MessageHandler,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
  Transport,
  TransportSubscription,
} from "../transport/index.ts";
import type { EventTrace } from "./event-trace.ts";
import { SIM_EPOCH_MS } from "./sim-host.ts";
import type { SimNetwork } from "./sim-network.ts";
import type { SimulatedClock } from "./simulated-clock.ts";
import { TappedTransport } from "./tapped-transport.ts";

/** The lease timings of the simulated controllers (virtual ms): a takeover within about 4.5 s. */
export const SIM_LEASE_TIMINGS: LeaseTimings = { renewMs: 1_000, timeoutMs: 4_000, checkMs: 500 };

/** A process's pause: while closed, whatever it does waits (a frozen process, or one cut off). */
class Gate {
  closed = false;
  private waiters: (() => void)[] = [];
  async pass(): Promise<void> {
    while (this.closed) await new Promise<void>((r) => this.waiters.push(r));
  }
  open(): void {
    this.closed = false;
    for (const w of this.waiters.splice(0)) w();
  }
}

/** The shared control log as one controller process reaches it: every call waits while the process is paused. */
class GatedControlLog implements ControlLogStore {
  readonly region: string;
  constructor(
    private readonly inner: ControlLogStore,
    private readonly gate: Gate,
  ) {
    this.region = inner.region;
  }
  async append(event: ControlEvent, expectedLastSeq: number): Promise<number> {
    await this.gate.pass();
    return this.inner.append(event, expectedLastSeq);
  }
  async readAll(): Promise<ControlLogEntry[]> {
    await this.gate.pass();
    return this.inner.readAll();
  }
  async readFrom(seq: number): Promise<ControlLogEntry[]> {
    await this.gate.pass();
    return this.inner.readFrom(seq);
  }
  async readRecordsFrom(seq: number): Promise<ControlLogRecord[]> {
    await this.gate.pass();
    return this.inner.readRecordsFrom(seq);
  }
  async lastSeq(): Promise<number> {
    await this.gate.pass();
    return this.inner.lastSeq();
  }
}

/** A controller process's bus while paused: nothing leaves or arrives; a request waits until it resumes. */
class GatedTransport implements Transport {
  readonly name: string;
  constructor(
    private readonly inner: Transport,
    private readonly gate: Gate,
    private readonly counters: Counters,
  ) {
    this.name = inner.name;
  }
  publish(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    if (this.gate.closed) return this.counters.inc("paused_publish_dropped");
    this.inner.publish(subject, data, opts);
  }
  subscribe(subject: string, handler: MessageHandler, opts?: SubscribeOptions): TransportSubscription {
    return this.inner.subscribe(subject, (m) => (this.gate.closed ? undefined : handler(m)), opts);
  }
  async request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage> {
    await this.gate.pass();
    return this.inner.request(subject, data, opts);
  }
  respond(msg: InboundMessage, data: Uint8Array, opts?: { headers?: Record<string, string> }): void {
    if (!this.gate.closed) this.inner.respond(msg, data, opts);
  }
  flush(): Promise<void> {
    return this.inner.flush();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** What the pair needs from the world around it. */
export interface ControllerPairDeps {
  readonly clock: SimulatedClock;
  readonly net: SimNetwork;
  readonly trace: EventTrace;
  readonly store: ControlLogStore;
  readonly counters: Counters;
  /** The site both controller processes run at. */
  readonly site: string;
  readonly config: (controllerId: string) => ControllerConfig;
  readonly ports: Pick<ControllerPorts, "repair" | "authorizeReleases">;
  /** Sees what a controller publishes (status, release frontiers), with the controller that said it. */
  readonly tap: (subject: string, data: Uint8Array, controller: Controller | undefined) => void;
  readonly error: (where: string, err: unknown) => void;
}

/** One controller process: its gate, lease keeper, and controller while it is the active one. */
interface ControllerProcess {
  readonly id: string;
  life: number;
  gate: Gate;
  keeper: LeaseKeeper | undefined;
  controller: Controller | undefined;
  down: boolean;
}

/**
 * Two controller processes of the simulated volume sharing it through the control lease (issue #45),
 * each with the production LeaseKeeper ticked on the simulated clock and the production Controller
 * started when it takes the lease. The world kills (`lose`) or pauses (`pause`: frozen and cut off,
 * then resumed where it stopped) whichever is active; the other takes over from the log.
 */
export class ControllerPair {
  private readonly procs: ControllerProcess[];

  constructor(private readonly deps: ControllerPairDeps) {
    this.procs = ["ctrl", "ctrl-b"].map((id) => ({
      id,
      life: 0,
      gate: new Gate(),
      keeper: undefined,
      controller: undefined,
      down: false,
    }));
  }

  /** Starts both processes, the first one first (it claims the free lease; the other waits). */
  async start(): Promise<void> {
    for (const p of this.procs) await this.boot(p);
  }

  /** The controller of the process whose keeper holds the lease (undefined between holders). */
  active(): Controller | undefined {
    return this.procs.find((p) => !p.down && !p.gate.closed && p.keeper?.role === "active")?.controller;
  }

  private rel(): number {
    return this.deps.clock.now() - SIM_EPOCH_MS;
  }

  private async boot(p: ControllerProcess): Promise<void> {
    const life = ++p.life;
    p.down = false;
    p.gate = new Gate();
    const gate = p.gate;
    const store = new GatedControlLog(this.deps.store, gate);
    const endpoint = this.deps.net.endpoint(`controller-${p.id}`, this.deps.site);
    const transport = new GatedTransport(
      new TappedTransport(endpoint, (subject, data) => this.deps.tap(subject, data, p.controller)),
      gate,
      this.deps.counters,
    );
    const clock = this.deps.clock;
    const keeper = new LeaseKeeper(this.deps.config(p.id).topology.volume, SIM_LEASE_TIMINGS, {
      store,
      follower: new ControlLogFollower(store),
      identity: { controller: p.id, clock },
      clock,
      counters: this.deps.counters,
      log: (line) => this.deps.trace.record({ atMs: this.rel(), kind: "lease", actor: p.id, detail: { line } }),
      becomeActive: async () => {
        const c = await startController(this.deps.config(p.id), { transport, clock, store, ...this.deps.ports });
        if (life !== p.life) return c.stop();
        p.controller = c;
      },
      stepDown: async () => {
        p.controller?.stop();
        p.controller = undefined;
      },
    });
    p.keeper = keeper;
    const tick = () => {
      if (life !== p.life) return;
      // A paused process does nothing at all; its keeper looks at the log again once it resumes.
      if (!gate.closed) void keeper.tick();
      clock.schedule(tick, SIM_LEASE_TIMINGS.checkMs, "lease");
    };
    await keeper.tick();
    clock.schedule(tick, SIM_LEASE_TIMINGS.checkMs, "lease");
  }

  private activeProcess(): ControllerProcess | undefined {
    return this.procs.find((p) => !p.down && p.keeper?.role === "active" && !p.gate.closed);
  }

  /** The active process dies for `durationMs`, then starts again (as a standby unless the lease is still its own). */
  lose(durationMs: number): void {
    const p = this.activeProcess();
    if (p === undefined) return;
    const life = ++p.life;
    p.down = true;
    p.gate.open();
    void p.keeper?.stop();
    p.controller?.stop();
    p.controller = undefined;
    this.deps.net.crash(`controller-${p.id}`);
    this.deps.trace.record({ atMs: this.rel(), kind: "controller_lost", actor: p.id, detail: { durationMs } });
    this.deps.clock.schedule(
      () => {
        if (life !== p.life) return;
        this.boot(p).catch((err) => this.deps.error("controller.restart", err));
      },
      durationMs,
      "ctrl-restart",
    );
  }

  /** The active process is frozen and cut off for `durationMs`, then resumes exactly where it stopped. */
  pause(durationMs: number): void {
    const p = this.activeProcess();
    if (p === undefined) return;
    const gate = p.gate;
    const life = p.life;
    gate.closed = true;
    this.deps.trace.record({ atMs: this.rel(), kind: "controller_paused", actor: p.id, detail: { durationMs } });
    this.deps.clock.schedule(
      () => {
        if (life !== p.life) return;
        gate.open();
        this.deps.trace.record({ atMs: this.rel(), kind: "controller_resumed", actor: p.id });
      },
      durationMs,
      "ctrl-resume",
    );
  }

  /** Stops both processes (end of run). A paused one stays frozen: nothing it had pending runs after the end. */
  async stop(): Promise<void> {
    for (const p of this.procs) {
      p.life++;
      p.controller?.stop();
      p.controller = undefined;
      if (!p.gate.closed) await p.keeper?.stop();
      else void p.keeper?.stop();
    }
  }
}
