import type { KeyObject } from "node:crypto";
import { startController, type Controller } from "../actors/controller.ts";
import type { ControllerConfig } from "../actors/controller/controller-config.ts";
import type { ControllerPorts, HolderAdmission, RepairLauncher } from "../actors/controller/controller-core.ts";
import { startHolder, type Holder } from "../actors/holder.ts";
import { laneKey, type HolderConfigInput, type ProtectedRamEvidence } from "../actors/holder/holder-config.ts";
import { releaseFrontierSpec } from "../actors/holder/holder-messages.ts";
import { startVolumeWriter, type VolumeWriter } from "../actors/volume-writer.ts";
import { CrashFileLayer } from "../core/crash-file-layer.ts";
import { Counters } from "../core/counters.ts";
import { CustodyError } from "../core/custody-error.ts";
import type { Random } from "../core/random.ts";
import { commitControlEvent } from "../custody/control-commit.ts";
import { ControlLogFollower } from "../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../custody/control-log.ts";
import type { ControlEvent, ControlEventBody } from "../custody/control-event.ts";
import { receiptBatchSpec } from "../custody/custody-messages.ts";
import { decodeReceiptBatch } from "../custody/receipt-batch.ts";
import { generateHolderKeyPair } from "../custody/signing.ts";
import { ControlLogPeers } from "../custody/control-peers.ts";
import { SimPreservedRam } from "./preserved-ram.ts";
import { RangeSet } from "../lanes/range-set.ts";
import { LossKind, siteDomains, type Scenario, type Site } from "../policies/index.ts";
import { SENDER_HEADER, SENT_THROUGH_HEADER } from "../transport/credit-sender.ts";
import { creditSubject, receiptSubject, releaseSubject, statusSubject, unitSubject } from "../transport/subjects.ts";
import { headerValue } from "../transport/transport.ts";
import { creditSpec, decodeMessage } from "../transport/wire/index.ts";
import { BLOCK_SIZE } from "../volume/format.ts";
import { SmartWalVolume } from "../volume/smartwal-volume.ts";
import { claimIncarnation } from "../actors/holder/incarnation.ts";
import { UnitOutbox } from "../actors/writer/unit-outbox.ts";
import type { EventTrace } from "./event-trace.ts";
import type { CreditTruth, HolderTruth, ReceiptTruth } from "./invariants.ts";
import type { SimNetwork } from "./sim-network.ts";
import type { SimulatedClock } from "./simulated-clock.ts";
import { TappedTransport } from "./tapped-transport.ts";
import type { HolderSpec, WorldSpec } from "./world.ts";

/** Virtual wall-clock time at which every simulated run starts (fault times are relative to it). */
export const SIM_EPOCH_MS = 1_700_000_000_000;

const BLOCKS = 256;
const VOLUME_DIR = "/sim/volume";
const CONTROL_REGION = "vault";
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

/** One simulated holder host: the real Holder actor while it runs, and the disk that outlives it. */
interface HolderHost {
  readonly spec: HolderSpec;
  readonly site: Site;
  readonly upstream: readonly string[];
  incarnation: number;
  holder: Holder | undefined;
  /** Destroyed for good (site destruction). */
  dead: boolean;
  evidenceValid: boolean;
  /** The host's disk (state directory, spill stream); a crash keeps only what was synced. */
  files: CrashFileLayer;
  /** The host's preserved memory (protected-RAM hosts). */
  readonly preserved: SimPreservedRam | undefined;
  /** Bumped at every (re)start; in-flight restarts of an older life give up. */
  life: number;
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
  private receipts: ReceiptTruth[] = [];
  private readonly sentBytes = new Map<string, { sender: string; gen: number; receiver: string; sent: number }>();
  private readonly grantedBytes = new Map<string, number>();
  private readonly senderGen = new Map<string, number>();
  private readonly keys = new Map<string, { privateKey: KeyObject; publicKey: Uint8Array }>();
  /** The region's control log; admissions committed to it (by the controller's policy or an operator) are traced. */
  private readonly store = new (class extends InMemoryControlLog {
    constructor(private readonly onAdmit: (holderId: string, incarnation: number) => void) {
      super(CONTROL_REGION);
    }
    override async append(event: ControlEvent, expectedLastSeq: number): Promise<number> {
      const seq = await super.append(event, expectedLastSeq);
      if (event.type === "admit_holder") this.onAdmit(event.holderId, event.incarnation);
      return seq;
    }
  })((holderId, incarnation) => this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "admitted", actor: holderId, detail: { inc: incarnation } }));
  private readonly operator = new ControlLogFollower(this.store);
  private operatorChain: Promise<unknown> = Promise.resolve();
  private controller: Controller | undefined;
  private controllerLife = 0;
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
    this.siteById = new Map(spec.sites.map((s) => [s.id, s]));
    for (const h of spec.holders) {
      const upstream = [spec.writer, ...spec.holders].filter((x) => x.downstream.includes(h.id)).map((x) => x.id);
      const preserved = h.protectedRam ? new SimPreservedRam() : undefined;
      this.hosts.set(h.id, { spec: h, site: this.siteById.get(h.site)!, upstream, incarnation: 1, holder: undefined, dead: false, evidenceValid: h.protectedRam, files: new CrashFileLayer(), preserved, life: 0 });
    }
    // Standby holders in the vault (never struck), one per holder: the controller's repair launcher
    // starts one to replace each holder a declared failure takes away.
    for (const h of spec.holders) {
      const id = standbyId(h.id);
      this.standbys.push(id);
      const sb: HolderSpec = { id, site: spec.vault.site, disk: false, protectedRam: false, keepUnits: 0, downstream: [] };
      this.hosts.set(id, { spec: sb, site: this.siteById.get(spec.vault.site)!, upstream: [spec.writer.id], incarnation: 1, holder: undefined, dead: false, evidenceValid: false, files: new CrashFileLayer(), preserved: undefined, life: 0 });
    }
  }

  /** Ids of the standby holders (not started until a repair needs one). */
  private readonly standbys: string[] = [];

  /** The repair launcher: starts a standby holder and returns its admission record. */
  private readonly launcher: RepairLauncher = {
    prepare: async (sb) => {
      const h = this.hosts.get(sb.holderId);
      if (h === undefined) throw new CustodyError("unknown_standby", `no standby ${sb.holderId}`, {});
      this.newKey(sb.holderId);
      await this.startHolderOn(h);
      this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "standby_started", actor: sb.holderId });
      return { holderId: sb.holderId, incarnation: h.incarnation, publicKey: this.keys.get(sb.holderId)!.publicKey, failureDomain: failureDomainOf(h.site) };
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
    await this.controller!.core.bootstrap(serving.map((h) => this.admission(h)), serving.map((h) => h.spec.id));
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
    return { holderId: h.spec.id, incarnation: 1, publicKey: this.keys.get(h.spec.id)!.publicKey, failureDomain: failureDomainOf(h.site) };
  }

  private holderConfig(h: HolderHost): HolderConfigInput {
    const s = h.site;
    const t = this.spec.timing;
    const unitBytes = Math.max(this.spec.workload.bytesPerUnit, BLOCK_SIZE) + 4096;
    return {
      holderId: h.spec.id,
      site: { region: s.region, az: s.az, host: s.host },
      residency: ["ram", ...(h.spec.disk ? (["disk"] as const) : []), ...(h.spec.protectedRam ? (["protected_ram"] as const) : [])],
      lanes: [{ volume: this.volume, lane: this.lane, upstream: [...h.upstream], downstream: [...h.spec.downstream] }],
      arena: { segmentBytes: 256 * 1024, limitBytes: 32 << 20, maxOutstandingCredit: Math.max(256 * 1024, t.creditWindow * unitBytes), maxUnitBytes: 128 * 1024 },
      receipts: { maxUnits: 16, maxDelayMs: t.receiptMs },
      ...(h.spec.disk ? { flush: { intervalMs: t.flushMs, deadlineMs: t.flushMs * 4 } } : {}),
      ...(h.spec.protectedRam ? { protectedRam: { evidence: this.evidence(h.evidenceValid), maxEvidenceAgeMs: 10 * t.durationMs + 60_000, minBatteryHealth: 0.5 } } : {}),
      epoch: 1,
      policyGeneration: 1,
    };
  }

  private evidence(valid: boolean): ProtectedRamEvidence {
    return {
      protectedBytes: 256 << 20,
      batteryHealth: valid ? 1 : 0,
      holdUpMs: 10_000,
      autonomousPreservation: true,
      drainBytesPerSec: 500_000_000,
      detectionMs: 10,
      persistenceCompletionMs: 50,
      marginMs: 50,
      measuredAt: SIM_EPOCH_MS,
      capabilityGeneration: 1,
    };
  }

  private async startHolderOn(h: HolderHost): Promise<void> {
    const life = ++h.life;
    const id = h.spec.id;
    this.senderGen.set(id, (this.senderGen.get(id) ?? 0) + 1);
    const endpoint = this.net.endpoint(id, h.site.id);
    const transport = new TappedTransport(endpoint, (subject, data, headers) => this.tapHolder(h, subject, data, headers));
    const peers = this.peersFor();
    await peers.refresh();
    const holder = await startHolder(this.holderConfig(h), {
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
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "start", actor: id, detail: { inc: h.incarnation } });
  }

  private async startController(): Promise<void> {
    const life = ++this.controllerLife;
    const endpoint = this.net.endpoint("controller", this.spec.vault.site);
    const transport = new TappedTransport(endpoint, (subject, data) => this.tapController(subject, data));
    const c = await startController(this.controllerConfig(), {
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

  private controllerConfig(): ControllerConfig {
    const { spec } = this;
    const holderSites: Record<string, string> = { [spec.vault.holder]: spec.vault.site };
    for (const h of spec.holders) holderSites[h.id] = h.site;
    for (const id of this.standbys) holderSites[id] = spec.vault.site;
    return {
      controllerId: "ctrl",
      region: CONTROL_REGION,
      evalIntervalMs: spec.timing.evalMs,
      admission: "key-continuity",
      repair: { standby: this.standbys.map((holderId) => ({ holderId, site: spec.vault.site })), bandwidthBytesPerSec: 100_000_000, receiptTimeoutMs: 4_000 },
      topology: {
        volume: spec.volume,
        lanes: [spec.lane],
        writerSite: spec.writer.site,
        sites: spec.sites,
        holderSites,
        bases: [{ id: "base0", holder: spec.vault.holder, cut: { [spec.lane]: 0 }, bytes: 0 }],
        keyAuthorities: [{ id: "ka", site: spec.vault.site }],
        links: [],
        recovery: { destination: spec.vault.site, detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
        scenarios: spec.scenarios,
        timelines: [],
        staleAfterMs: 2 * spec.timing.suspectMs,
        protectedEvidenceMaxAgeMs: 10 * spec.timing.durationMs + 60_000,
        releasable: spec.holders.map((h) => h.id),
      },
    };
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
    this.senderGen.set(this.spec.writer.id, (this.senderGen.get(this.spec.writer.id) ?? 0) + 1);
    const endpoint = this.net.endpoint(this.spec.writer.id, this.spec.writer.site);
    const transport = new TappedTransport(endpoint, (subject, _data, headers) => this.tapSender(this.spec.writer.id, subject, headers));
    const holderSites: Record<string, Site> = {};
    for (const h of this.hosts.values()) holderSites[h.spec.id] = h.site;
    const w = startVolumeWriter(
      {
        writerId: this.spec.writer.id,
        volume: this.volume,
        term: this.writerTerm,
        lanes: [{ lane: this.lane, fromLba: 0, toLba: BLOCKS - 1, holders: [...this.spec.writer.downstream], firstSeq }],
        contracts: [],
        holderSites,
        topologyEpoch: 1,
        policyGeneration: 1,
      },
      {
        transport,
        clock: this.clock,
        volume,
        dataKey: new Uint8Array(32).fill(7),
        peers: this.writerPeers ??= this.peersFor(),
        outbox,
        recovered,
        onUnit: (u) => (this.emittedMax = Math.max(this.emittedMax, u.lastSeq)),
      },
    );
    if (life !== this.writerLife) {
      w.stop();
      return;
    }
    this.writer = w;
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "start", actor: this.spec.writer.id, detail: { term: this.writerTerm, firstSeq } });
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
        this.trace.hashOnly({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "write", actor: "writer", detail: { lsn: ack.lsn } });
      } catch (err) {
        if (life === this.writerLife) this.hooks.error("writer.write", err);
      } finally {
        if (life === this.writerLife) this.writing = false;
      }
    })();
  }

  // ---- taps: what actors say, as they say it ----------------------------------------------------

  private tapHolder(h: HolderHost, subject: string, data: Uint8Array, headers: Readonly<Record<string, string>>): void {
    if (subject === receiptSubject(this.volume, this.lane)) {
      const signed = decodeMessage(receiptBatchSpec, data);
      let claimed = RangeSet.EMPTY;
      for (const r of decodeReceiptBatch(signed.body).receipts) claimed = claimed.union(r.retained);
      const ob = h.holder?.core.lanes.get(laneKey(this.volume, this.lane))?.obligations;
      const held = ob === undefined ? RangeSet.EMPTY : ob.retained.subtract(ob.released);
      this.receipts.push({ holder: h.spec.id, claimed, held });
      return;
    }
    if (subject === creditSubject(h.spec.id, this.volume, this.lane)) {
      const g = decodeMessage(creditSpec, data);
      const k = `${g.sender}>${g.holder}`;
      this.grantedBytes.set(k, Math.max(this.grantedBytes.get(k) ?? 0, g.grantedThrough));
      return;
    }
    this.tapSender(h.spec.id, subject, headers);
  }

  /** A unit leaving `sender`: its cumulative sent bytes on that edge (checked against grants). */
  private tapSender(sender: string, subject: string, headers: Readonly<Record<string, string>>): void {
    if (!subject.startsWith("custody.v1.unit.")) return;
    const sent = Number(headerValue(headers, SENT_THROUGH_HEADER) ?? NaN);
    if (!Number.isFinite(sent) || headerValue(headers, SENDER_HEADER) !== sender) return;
    for (const to of this.downstreamOf(sender)) {
      if (subject !== unitSubject(to, this.volume, this.lane)) continue;
      const gen = this.senderGen.get(sender) ?? 0;
      const k = `${sender}#${gen}>${to}`;
      const e = this.sentBytes.get(k);
      if (e === undefined) this.sentBytes.set(k, { sender, gen, receiver: to, sent });
      else e.sent = Math.max(e.sent, sent);
    }
  }

  private downstreamOf(id: string): readonly string[] {
    return id === this.spec.writer.id ? this.spec.writer.downstream : (this.hosts.get(id)?.spec.downstream ?? []);
  }

  private tapController(subject: string, data: Uint8Array): void {
    if (subject === statusSubject(this.volume)) {
      const core = this.controller?.core;
      const report = core?.report;
      if (core === undefined || report === undefined) return;
      for (const h of core.currentState().holders) {
        let claimed = RangeSet.EMPTY;
        for (const c of h.claims) if (c.lane === this.lane) claimed = claimed.union(c.ranges);
        this.ledgerClaims.set(h.id, claimed);
      }
      const cuts = new Map<string, number>();
      // A cut counts as confirmed only on fresh evidence: a report resting on a silent holder's
      // stale receipts says so (`evidence: stale`) and promises nothing.
      for (const r of report.reports) if (r.required && r.kind === "scenario") cuts.set(r.name, r.evidence === "observed" ? (r.cut?.[this.lane] ?? -1) : -1);
      this.hooks.confirmed(cuts);
      return;
    }
    if (subject.startsWith("custody.v1.release.")) {
      const f = decodeMessage(releaseFrontierSpec, data);
      if (subject !== releaseSubject(f.holder)) return;
      const ranges = RangeSet.fromJSON(f.ranges);
      this.granted.set(f.holder, (this.granted.get(f.holder) ?? RangeSet.EMPTY).union(ranges));
      this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "grant_release", actor: "ctrl", detail: { holder: f.holder, ranges: f.ranges } });
      this.hooks.granted(f.holder, ranges);
    }
  }

  // ---- what the checks see ----------------------------------------------------------------------

  /**
   * What the controller keeps in memory against what the control log holds: audits in memory,
   * releases committed (counter), commit runs kept, and release entries persisted in the log.
   */
  async controllerFootprint(): Promise<{ audits: number; releasesCommitted: number; commitRuns: number; releaseEntries: number } | undefined> {
    const core = this.controller?.core;
    if (core === undefined) return undefined;
    const entries = await this.store.readAll();
    const releaseEntries = entries.filter((e) => e.event.type === "release_ranges" || e.event.type === "release_to_base").length;
    return { audits: core.audits.length, releasesCommitted: core.counters.get("release_committed"), commitRuns: core.commitRunCount, releaseEntries };
  }

  /** Ground truth of every holder (and the vault's base) right now. */
  holderTruths(): HolderTruth[] {
    const key = laneKey(this.volume, this.lane);
    const out: HolderTruth[] = [];
    for (const h of this.hosts.values()) {
      const ob = h.holder?.core.lanes.get(key)?.obligations;
      const disk = ob?.diskResident ?? RangeSet.EMPTY;
      out.push({
        id: h.spec.id,
        site: h.site.id,
        ram: ob === undefined ? RangeSet.EMPTY : ob.retained.subtract(disk),
        disk,
        ramSurvivesPower: h.spec.protectedRam && h.evidenceValid,
        released: ob?.released ?? RangeSet.EMPTY,
        ledger: this.ledgerClaims.get(h.spec.id) ?? RangeSet.EMPTY,
        granted: this.granted.get(h.spec.id) ?? RangeSet.EMPTY,
      });
    }
    // The base snapshot in the vault covers everything before the first sequence.
    out.push({ id: this.spec.vault.holder, site: this.spec.vault.site, ram: RangeSet.EMPTY, disk: RangeSet.of(0, 0), ramSurvivesPower: false, released: RangeSet.EMPTY, ledger: RangeSet.EMPTY, granted: RangeSet.EMPTY });
    return out;
  }

  /** The writer's own copy as ground truth: what its outbox (disk) and retention (RAM) still hold. */
  writerTruth(): HolderTruth {
    const retained = this.writer?.core.retainedSeqs(this.lane) ?? RangeSet.EMPTY;
    const none = RangeSet.EMPTY;
    return { id: this.spec.writer.id, site: this.spec.writer.site, ram: none, disk: retained, ramSurvivesPower: false, released: none, ledger: none, granted: none };
  }

  /** Receipts sent since the last call, each with what its holder held when sending it. */
  takeReceipts(): ReceiptTruth[] {
    const r = this.receipts;
    this.receipts = [];
    return r;
  }

  /** Per edge and sender life: bytes sent vs the most the receiver granted that sender. */
  credits(): CreditTruth[] {
    const out: CreditTruth[] = [];
    for (const e of this.sentBytes.values()) {
      out.push({ sender: e.sender, receiver: e.receiver, inc: e.gen, sent: e.sent, maxGranted: this.grantedBytes.get(`${e.sender}>${e.receiver}`) ?? 0 });
    }
    return out;
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
      this.clock.schedule(() => this.operate(`declare ${id}`, () => ({ type: "declare_failure", scope: "holder", domain: failureDomainOf(h.site), holderIds: [id] })), 1_000, "declare");
      return;
    }
    // The supervisor starts the process again: it claims a new incarnation from its state
    // directory and asks to be admitted; the controller's admission policy admits it.
    this.clock.schedule(() => {
      if (h.life !== life || h.dead) return;
      this.startHolderOn(h).catch((err) => this.hooks.error("holder.restart", err));
    }, this.spec.timing.restartMs, "restart");
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
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: destroy ? "destroyed" : "crashed", actor: this.spec.writer.id });
    if (destroy) {
      this.writerDead = true;
      return;
    }
    this.clock.schedule(() => {
      if (life !== this.writerLife) return;
      void this.startWriter().catch((err) => this.hooks.error("writer.restart", err));
    }, this.spec.timing.restartMs, "restart");
  }

  /** The hold-up evidence of `holder` fails: its host reports it, and RAM no longer survives power loss. */
  degradeEvidence(holder: string): void {
    const h = this.hosts.get(holder);
    if (h === undefined || !h.spec.protectedRam) return;
    h.evidenceValid = false;
    h.holder?.updateEvidence(this.evidence(false));
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "evidence_degraded", actor: holder });
  }

  /** The controller process is lost for `durationMs`; its successor folds the durable control log. */
  loseController(durationMs: number): void {
    const c = this.controller;
    if (c === undefined) return;
    const life = ++this.controllerLife;
    this.controller = undefined;
    c.stop();
    this.net.crash("controller");
    this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "controller_lost", actor: "ctrl", detail: { durationMs } });
    this.clock.schedule(() => {
      if (life !== this.controllerLife) return;
      void this.startController().catch((err) => this.hooks.error("controller.restart", err));
    }, durationMs, "ctrl-restart");
  }

  /** An operator commit to the control log (host agents, failure declarations), serialized. */
  private operate(what: string, body: () => ControlEventBody): Promise<void> {
    const run = async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          await commitControlEvent(this.store, this.operator, { controller: "operator", clock: this.clock }, () => body());
          this.trace.record({ atMs: this.clock.now() - SIM_EPOCH_MS, kind: "operator", actor: "operator", detail: { what } });
          return;
        } catch (err) {
          const code = err instanceof CustodyError ? err.code : "error";
          if (code === "control_conflict" && attempt < 10) continue;
          this.counters.inc(`operator_${code}`);
          if (!(err instanceof CustodyError)) throw err;
          return;
        }
      }
    };
    const p = this.operatorChain.then(run, run);
    this.operatorChain = p.catch(() => undefined);
    return p;
  }

  /** Stops every actor (end of run). */
  async stop(): Promise<void> {
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

/** The standby holder that may replace `holderId`. */
function standbyId(holderId: string): string {
  return `standby-${holderId}`;
}

/** The failure domain a holder is admitted with (region/az/host, as the e2e deployment uses). */
function failureDomainOf(s: Site): string {
  return `${s.region}/${s.az}/${s.host}`;
}
