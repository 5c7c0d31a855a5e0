import type { KeyObject } from "node:crypto";
import { startController, type Controller } from "../actors/index.ts";
import type { ControllerPorts, HolderAdmission, RepairLauncher } from "../actors/index.ts";
import { startHolder } from "../actors/index.ts";
import { startVolumeWriter, type VolumeWriter } from "../actors/index.ts";
import { CrashFileLayer } from "../core/index.ts";
import { Counters } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";
import type { Random } from "../core/index.ts";
import { generateHolderKeyPair } from "../custody/index.ts";
import { ControlLogFollower, ControlLogPeers } from "../custody/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { LossKind, siteDomains, type Scenario, type Site } from "../policies/index.ts";
import { BLOCK_SIZE } from "../volume/index.ts";
import { SmartWalVolume } from "../volume/index.ts";
import { claimIncarnation } from "../actors/index.ts";
import { UnitOutbox } from "../actors/index.ts";
import { ActorTaps } from "./actor-taps.ts";
import type { EventTrace } from "./event-trace.ts";
import { holderTruthsOf, writerTruthOf } from "./holder-truths.ts";
import { controllerFootprintOf, type ControllerFootprint } from "./controller-footprint.ts";
import type { CreditTruth, HolderTruth, ReceiptTruth } from "./invariants.ts";
import { OperatorDesk } from "./operator-desk.ts";
import {
  controllerConfigFor,
  SIM_CONTROL_REGION,
  SIM_VOLUME_BLOCKS as BLOCKS,
  writerConfigFor,
} from "./sim-deployment.ts";
import {
  addWorldHosts,
  failureDomainOf,
  holderConfigFor,
  protectedRamEvidence,
  SIM_EPOCH_MS,
  type HolderHost,
} from "./sim-host.ts";
import type { SimNetwork } from "./sim-network.ts";
import type { SimulatedClock } from "./simulated-clock.ts";
import { TappedTransport } from "./tapped-transport.ts";
import { TracedControlLog } from "./traced-control-log.ts";
import { ControllerPair } from "./controller-pair.ts";
import { tapControllerMessage, type ControllerTapSink } from "./controller-tap.ts";
import { ControlLogTruth } from "./control-log-truth.ts";
import type { WorldSpec } from "./world.ts";

export { SIM_EPOCH_MS } from "./sim-host.ts";

const VOLUME_DIR = "/sim/volume";
const WRITER_STATE = "/writer";

/** What the world tells the runner as it happens. */
export interface ActorWorldHooks {
  /** The controller finished an evaluation: the cut it reports for each required scenario. */
  confirmed(cuts: ReadonlyMap<string, number>): void;
  /** The controller committed and published a release frontier. */
  granted(holder: string, ranges: RangeSet): void;
  /** Something an actor did that no check covers failed unexpectedly (a bug to report). */
  error(where: string, err: unknown): void;
}

/** Options of the actor world. */
export interface ActorWorldOptions {
  /** Test-only: replaces the controller's release rule (see ControllerPorts.authorizeReleases). */
  authorizeReleases?: ControllerPorts["authorizeReleases"];
}

/**
 * The seeded world of `WorldSpec` played by the production actors: every holder is a real
 * `Holder` (XState) with its arena, spill stream, receipts and credits; the volume writer is the
 * real `VolumeWriter` over a SmartWAL volume on an in-memory crash-injecting file layer; the
 * controller is the real `Controller` committing to an in-memory control log. They run on a
 * SimNetwork in virtual time. The world plays the hosts and operators around them: it crashes and
 * restarts processes (new incarnation, new key, admitted in the control log), destroys sites and
 * declares the failure, degrades protected-RAM evidence and takes the controller away.
 */
export class ActorWorld {
  readonly counters = new Counters();
  readonly hosts = new Map<string, HolderHost>();
  /** Lane sequences whose write (and local sync) the writer acknowledged. */
  acked = RangeSet.EMPTY;
  /** Release frontiers the controller committed, per holder (cumulative). */
  readonly granted = new Map<string, RangeSet>();
  /** What the controller's evaluation input claimed for each holder at its last evaluation. */
  private readonly ledgerClaims = new Map<string, RangeSet>();
  private readonly taps: ActorTaps;
  private readonly keys = new Map<string, { privateKey: KeyObject; publicKey: Uint8Array }>();
  /** The control log as the checks see it (folded as entries are committed). */
  readonly log: ControlLogTruth;
  /** The region's control log; admissions committed to it (by the controller's policy or an operator) are traced. */
  readonly store = new TracedControlLog(SIM_CONTROL_REGION, (entry) => {
    this.log.fold(entry);
    if (entry.event.type === "admit_holder")
      this.trace.record({
        atMs: this.clock.now() - SIM_EPOCH_MS,
        kind: "admitted",
        actor: entry.event.holderId,
        detail: { inc: entry.event.incarnation },
      });
  });
  /** The world's operator (failure declarations, holds). */
  readonly operator: OperatorDesk;
  private controller: Controller | undefined;
  private controllerLife = 0;
  /**
   * With `spec.failover`: an active and a standby controller process sharing the volume's lease
   * (replaces `controller`).
   */
  private pair: ControllerPair | undefined;
  /** The controller that currently runs the volume's job. */
  private get ctl(): Controller | undefined {
    return this.pair !== undefined ? this.pair.active() : this.controller;
  }
  private writer: VolumeWriter | undefined;
  private writerVolume: SmartWalVolume | undefined;
  private writerFiles = new CrashFileLayer();
  private writerPeers: ControlLogPeers | undefined;
  private writerTerm = 1;
  private writerLife = 0;
  private writerDead = false;
  private writing = false;
  private emittedMax = 0;
  private readonly lane: string;
  private readonly volume: string;
  private readonly siteById: Map<string, Site>;

  /** A peer directory following the control log, as every production actor has one (one per actor). */
  private peersFor(): ControlLogPeers {
    return new ControlLogPeers(new ControlLogFollower(this.store), this.clock, 500);
  }

  constructor(
    readonly spec: WorldSpec,
    private readonly clock: SimulatedClock,
    private readonly net: SimNetwork,
    private readonly trace: EventTrace,
    private readonly random: Random,
    private readonly hooks: ActorWorldHooks,
    private readonly opts: ActorWorldOptions = {},
  ) {
    this.lane = spec.lane;
    this.volume = spec.volume;
    this.log = new ControlLogTruth(spec.volume, spec.lane);
    this.siteById = new Map(spec.sites.map((s) => [s.id, s]));
    this.taps = new ActorTaps(spec, this.hosts);
    this.operator = new OperatorDesk(this.store, clock, trace, this.counters);
    this.standbys = addWorldHosts(spec, this.siteById, this.hosts);
  }

  /** Ids of the standby holders (not started until a repair needs one). */
  private readonly standbys: string[];

  /** The repair launcher: starts a standby holder and returns its admission record. */
  private readonly launcher: RepairLauncher = {
    prepare: async (sb) => {
      const h = this.hosts.get(sb.holderId);
      if (h === undefined) throw new CustodyError("unknown_standby", `no standby ${sb.holderId}`, {});
      this.newKey(sb.holderId);
      await this.startHolderOn(h);
      this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "standby_started", actor: sb.holderId });
      return {
        holderId: sb.holderId,
        incarnation: h.incarnation,
        publicKey: this.keys.get(sb.holderId)!.publicKey,
        failureDomain: failureDomainOf(h.site),
      };
    },
  };

  // ---- start ------------------------------------------------------------------------------------

  /** Starts the controller (and bootstraps the control log), every holder, then the writer and its workload. */
  async start(): Promise<void> {
    for (const id of this.hosts.keys()) this.newKey(id);
    await this.startController();
    // Holders start first (each claims incarnation 1 from its empty state directory), then the
    // operator's bootstrap admits them and creates the obligation.
    const serving = [...this.hosts.values()].filter((h) => !this.standbys.includes(h.spec.id));
    await Promise.all(serving.map((h) => this.startHolderOn(h)));
    await this.ctl!.bootstrap(
      serving.map((h) => this.admission(h)),
      serving.map((h) => h.spec.id),
    );
    await this.startWriter();
    const tick = () => {
      if (this.writerDead) return;
      this.writeOnce();
      this.clock.schedule(tick, this.spec.workload.intervalMs, "workload");
    };
    this.clock.schedule(tick, this.spec.workload.intervalMs, "workload");
  }

  /** The host's signing key (kept on its disk: every incarnation of the holder signs with it). */
  private newKey(id: string): void {
    const kp = generateHolderKeyPair();
    this.keys.set(id, { privateKey: kp.privateKey, publicKey: kp.publicKey });
  }

  private admission(h: HolderHost): HolderAdmission {
    return {
      holderId: h.spec.id,
      incarnation: 1,
      publicKey: this.keys.get(h.spec.id)!.publicKey,
      failureDomain: failureDomainOf(h.site),
    };
  }

  private async startHolderOn(h: HolderHost): Promise<void> {
    const life = ++h.life;
    const id = h.spec.id;
    this.taps.newLife(id);
    const endpoint = this.net.endpoint(id, h.site.id);
    const transport = new TappedTransport(endpoint, (subject, data, headers) =>
      this.taps.holder(h, subject, data, headers),
    );
    const peers = this.peersFor();
    await peers.refresh();
    const holder = await startHolder(holderConfigFor(this.spec, h), {
      transport,
      clock: this.clock,
      privateKey: this.keys.get(id)!.privateKey,
      peers,
      stateDir: { files: h.files, dir: `/state/${id}` },
      ...(h.spec.disk ? { files: h.files, spillPath: `/spill/${id}.log` } : {}),
      ...(h.preserved ? { preserved: h.preserved } : {}),
    });
    if (h.life !== life || h.dead) {
      await holder.stop();
      return;
    }
    h.incarnation = holder.incarnation;
    h.holder = holder;
    this.trace.record({
      atMs: this.clock.now() - SIM_EPOCH_MS,
      kind: "start",
      actor: id,
      detail: { inc: h.incarnation },
    });
  }

  private async startController(): Promise<void> {
    if (this.spec.failover === true) {
      this.pair ??= new ControllerPair({
        clock: this.clock,
        net: this.net,
        trace: this.trace,
        store: this.store,
        counters: this.counters,
        site: this.spec.vault.site,
        config: (controllerId) => ({ ...controllerConfigFor(this.spec, this.standbys), controllerId }),
        ports: {
          repair: this.launcher,
          ...(this.opts.authorizeReleases ? { authorizeReleases: this.opts.authorizeReleases } : {}),
        },
        tap: (subject, data, controller) => this.tapController(subject, data, controller),
        error: (where, err) => this.hooks.error(where, err),
      });
      return this.pair.start();
    }
    const life = ++this.controllerLife;
    const endpoint = this.net.endpoint("controller", this.spec.vault.site);
    const transport = new TappedTransport(endpoint, (subject, data) => this.tapController(subject, data));
    const c = await startController(controllerConfigFor(this.spec, this.standbys), {
      transport,
      clock: this.clock,
      store: this.store,
      repair: this.launcher,
      ...(this.opts.authorizeReleases ? { authorizeReleases: this.opts.authorizeReleases } : {}),
    });
    if (life !== this.controllerLife) {
      c.stop();
      return;
    }
    this.controller = c;
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "start", actor: "ctrl" });
  }

  private async startWriter(): Promise<void> {
    const life = ++this.writerLife;
    if (this.writerVolume === undefined) {
      await SmartWalVolume.create(VOLUME_DIR, { blockCount: BLOCKS, walCapacity: 4096 }, this.writerFiles);
    }
    const files = this.writerFiles;
    const volume = await SmartWalVolume.open(VOLUME_DIR, { fileLayer: files, clock: this.clock });
    // Every start is a new term, claimed durably; the outbox holds every unit ever sent that custody
    // has not confirmed, so the new term starts above all of them and ships them again first.
    const term = await claimIncarnation(files, WRITER_STATE, { name: "term" });
    const { outbox, recovered } = await UnitOutbox.open(files, `${WRITER_STATE}/outbox`, this.clock);
    const firstSeq = outbox.maxSeq(this.lane) + 1;
    this.writerTerm = term;
    this.writerVolume = volume;
    this.taps.newLife(this.spec.writer.id);
    const endpoint = this.net.endpoint(this.spec.writer.id, this.spec.writer.site);
    const transport = new TappedTransport(endpoint, (subject, _data, headers) =>
      this.taps.sender(this.spec.writer.id, subject, headers),
    );
    const holderSites: Record<string, Site> = {};
    for (const h of this.hosts.values()) holderSites[h.spec.id] = h.site;
    const w = startVolumeWriter(writerConfigFor(this.spec, this.writerTerm, firstSeq, holderSites), {
      transport,
      clock: this.clock,
      volume,
      dataKey: new Uint8Array(32).fill(7),
      peers: (this.writerPeers ??= this.peersFor()),
      outbox,
      recovered,
      onUnit: (u) => (this.emittedMax = Math.max(this.emittedMax, u.lastSeq)),
    });
    if (life !== this.writerLife) {
      w.stop();
      return;
    }
    this.writer = w;
    this.trace.record({
      atMs: this.clock.now() - SIM_EPOCH_MS,
      kind: "start",
      actor: this.spec.writer.id,
      detail: { term: this.writerTerm, firstSeq },
    });
  }

  /** One application write of the workload, acknowledged after a local sync (skipped while one is in flight). */
  private writeOnce(): void {
    const w = this.writer;
    if (w === undefined || this.writing) return;
    const blocks = Math.max(1, Math.floor(this.spec.workload.bytesPerUnit / BLOCK_SIZE));
    const lba = this.random.int(0, BLOCKS - blocks);
    const data = new Uint8Array(blocks * BLOCK_SIZE).fill(lba & 0xff);
    const life = this.writerLife;
    this.writing = true;
    void (async () => {
      try {
        const ack = await w.write(lba, data);
        await w.sync();
        if (life !== this.writerLife) return; // crashed before the acknowledgement reached the application
        for (const p of ack.pieces) this.acked = this.acked.add(p.seq);
        this.trace.hashOnly({
          atMs: this.clock.now() - SIM_EPOCH_MS,
          kind: "write",
          actor: "writer",
          detail: { lsn: ack.lsn },
        });
      } catch (err) {
        if (life === this.writerLife) this.hooks.error("writer.write", err);
      } finally {
        if (life === this.writerLife) this.writing = false;
      }
    })();
  }

  // ---- taps: what actors say, as they say it ----------------------------------------------------

  private tapController(subject: string, data: Uint8Array, who?: Controller): void {
    const { spec, ledgerClaims, granted, trace, hooks } = this;
    const sink: ControllerTapSink = {
      volume: spec.volume,
      lane: spec.lane,
      ledgerClaims,
      granted,
      trace,
      relMs: () => this.clock.now() - SIM_EPOCH_MS,
      confirmed: (c) => hooks.confirmed(c),
      grantedTo: (h, r) => hooks.granted(h, r),
    };
    tapControllerMessage(sink, subject, data, who ?? this.controller);
  }

  // ---- what the checks see ----------------------------------------------------------------------

  /** What the controller keeps in memory against what the control log holds (sim/controller-footprint.ts). */
  async controllerFootprint(): Promise<ControllerFootprint | undefined> {
    return this.ctl === undefined ? undefined : controllerFootprintOf(this.ctl, this.store);
  }

  /** Ground truth of every holder (and the vault's base) right now. */
  holderTruths(): HolderTruth[] {
    return holderTruthsOf(this.spec, this.hosts.values(), this.ledgerClaims, this.granted, (id) =>
      this.log.committed(id),
    );
  }

  /** The writer's own copy as ground truth: what its outbox (disk) and retention (RAM) still hold. */
  writerTruth(): HolderTruth {
    return writerTruthOf(this.spec.writer, this.writer?.retainedSeqs(this.lane) ?? RangeSet.EMPTY);
  }

  /** Receipts sent since the last call, each with what its holder held when sending it. */
  takeReceipts(): ReceiptTruth[] {
    return this.taps.takeReceipts();
  }

  /** Per edge and sender life: bytes sent vs the most the receiver granted that sender. */
  credits(): CreditTruth[] {
    return this.taps.credits();
  }

  /** The newest sequence the writer has acknowledged. */
  get ackedHead(): number {
    return this.acked.max ?? 0;
  }

  // ---- faults -----------------------------------------------------------------------------------

  /** Applies a scenario's losses to the world: crashes, power losses and destruction per site. */
  strike(scenario: Scenario): void {
    const hit = new Map<string, LossKind>();
    for (const s of this.spec.sites) {
      for (const l of scenario.losses) {
        if (!siteDomains(s).has(l.domain)) continue;
        if (hit.get(s.id) !== LossKind.siteDestruction) hit.set(s.id, l.kind);
      }
    }
    for (const h of this.hosts.values()) {
      const kind = hit.get(h.site.id);
      if (kind === undefined || kind === LossKind.partition) continue;
      this.crashHolder(h, kind === LossKind.siteDestruction);
    }
    const wk = hit.get(this.spec.writer.site);
    if (wk !== undefined && wk !== LossKind.partition) this.crashWriter(wk === LossKind.siteDestruction);
  }

  private crashHolder(h: HolderHost, destroy: boolean): void {
    if (h.dead) return;
    const id = h.spec.id;
    const life = ++h.life;
    const old = h.holder;
    h.holder = undefined;
    this.net.crash(id);
    // The process is gone: its timers and subscriptions die with it (stop() only detaches them).
    if (old) void old.stop().catch((err) => this.hooks.error("holder.stop", err));
    // What reached the platter survives a crash; destruction takes the disk too. Preserved memory
    // survives only if the hold-up evidence is valid as the host goes down.
    h.files = destroy ? new CrashFileLayer() : h.files.crashAt(h.files.opCount());
    h.preserved?.crash(!destroy && h.evidenceValid);
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: destroy ? "destroyed" : "crashed", actor: id });
    if (destroy) {
      h.dead = true;
      this.clock.schedule(
        () =>
          this.operator.commit(`declare ${id}`, () => ({
            type: "declare_failure",
            scope: "holder",
            domain: failureDomainOf(h.site),
            holderIds: [id],
          })),
        1_000,
        "declare",
      );
      return;
    }
    // The supervisor starts the process again: it claims a new incarnation from its state
    // directory and asks to be admitted; the controller's admission policy admits it.
    this.clock.schedule(
      () => {
        if (h.life !== life || h.dead) return;
        this.startHolderOn(h).catch((err) => this.hooks.error("holder.restart", err));
      },
      this.spec.timing.restartMs,
      "restart",
    );
  }

  private crashWriter(destroy: boolean): void {
    if (this.writerDead) return;
    const life = ++this.writerLife;
    this.writer?.stop();
    this.writer = undefined;
    this.writing = false;
    this.net.crash(this.spec.writer.id);
    // Unsynced writes are lost; every acknowledged write was synced.
    this.writerFiles = this.writerFiles.crashAt(this.writerFiles.opCount());
    this.trace.record({
      atMs: this.clock.now() - SIM_EPOCH_MS,
      kind: destroy ? "destroyed" : "crashed",
      actor: this.spec.writer.id,
    });
    if (destroy) {
      this.writerDead = true;
      return;
    }
    this.clock.schedule(
      () => {
        if (life !== this.writerLife) return;
        void this.startWriter().catch((err) => this.hooks.error("writer.restart", err));
      },
      this.spec.timing.restartMs,
      "restart",
    );
  }

  /** The hold-up evidence of `holder` fails: its host reports it, and RAM no longer survives power loss. */
  degradeEvidence(holder: string): void {
    const h = this.hosts.get(holder);
    if (h === undefined || !h.spec.protectedRam) return;
    h.evidenceValid = false;
    h.holder?.updateEvidence(protectedRamEvidence(false));
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "evidence_degraded", actor: holder });
  }

  /** The controller process is lost for `durationMs`; its successor folds the durable control log. */
  loseController(durationMs: number): void {
    if (this.pair !== undefined) return this.pair.lose(durationMs);
    const c = this.controller;
    if (c === undefined) return;
    const life = ++this.controllerLife;
    this.controller = undefined;
    c.stop();
    this.net.crash("controller");
    this.trace.record({
      atMs: this.clock.now() - SIM_EPOCH_MS,
      kind: "controller_lost",
      actor: "ctrl",
      detail: { durationMs },
    });
    this.clock.schedule(
      () => {
        if (life !== this.controllerLife) return;
        void this.startController().catch((err) => this.hooks.error("controller.restart", err));
      },
      durationMs,
      "ctrl-restart",
    );
  }

  /** With failover, the active controller process freezes for `durationMs` (else it is lost that long). */
  pauseController(durationMs: number): void {
    if (this.pair !== undefined) return this.pair.pause(durationMs);
    this.loseController(durationMs);
  }

  /** Stops every actor (end of run). */
  async stop(): Promise<void> {
    await this.pair?.stop();
    this.controllerLife++;
    this.writerLife++;
    this.controller?.stop();
    this.writer?.stop();
    for (const h of this.hosts.values()) {
      h.life++;
      await h.holder?.stop();
      h.holder = undefined;
    }
  }
}
