import { unitRecordBytes } from "../../arena/segment.ts";
import type { Clock } from "../../core/clock.ts";
import { Counters } from "../../core/counters.ts";
import { CustodyError } from "../../core/custody-error.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { makeTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import { verifyReceiptBatch } from "../../custody/receipt-verification.ts";
import { CreditSender } from "../../transport/credit-sender.ts";
import { eventSubject, receiptSubject, releaseSubject, statusSubject } from "../../transport/subjects.ts";
import { volumeStatusSpec, type VolumeStatus } from "../controller/status-document.ts";
import type { ConnectionEvent, InboundMessage, Transport, TransportSubscription } from "../../transport/transport.ts";
import { decodeMessage, encodeMessage, unitSpec } from "../../transport/wire/index.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import type { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import type { PeerDirectory } from "../holder/holder-ports.ts";
import { protectedSeqs } from "./protection.ts";
import { dueResends, forgetReceipted, noteResent, noteSent, receiverReset, type DownstreamLane } from "../holder/edge-repair.ts";
import { LaneObligations } from "../holder/lane-obligations.ts";
import { SendLog } from "../../lanes/send-log.ts";
import { UnitRetention } from "./unit-retention.ts";
import { openPayload, sealPayload, type WriteRecord } from "./unit-payload.ts";
import type { UnitOutbox } from "./unit-outbox.ts";
import {
  checkWriterConfig,
  ProtectionTimeoutError,
  UnknownContractError,
  WriteRejectedError,
  type LaneSpec,
  type VolumeWriterConfig,
} from "./writer-config.ts";
import { writerProgressSpec } from "./writer-messages.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { releaseFrontierSpec } from "../holder/holder-messages.ts";
import { FrontierBacking } from "../holder/frontier-backing.ts";

/** Ports of a volume writer: the volume, the data key, and the seams. */
export interface VolumeWriterPorts {
  transport: Transport;
  clock: Clock;
  volume: SmartWalVolume;
  /** The volume's data key, obtained from the key authority (holders never see it). */
  dataKey: Uint8Array;
  /** Public keys of holders, to verify their receipts. */
  peers: PeerDirectory;
  counters?: Counters;
  /** Called with every unit as it is handed to the credit senders (tests, recovery references). */
  onUnit?: (u: TransportUnit) => void;
  /** Called after every verified receipt batch folded into protection (benchmarks, status). */
  onReceipt?: (lane: string) => void;
  /**
   * The durable outbox (production writers always have one): units are made durable there before
   * they are sent, and a local sync covers it too. With it, `recovered` are the units an earlier
   * writer process left unconfirmed: they are shipped again first, re-sealed under this term.
   */
  outbox?: UnitOutbox;
  recovered?: readonly TransportUnit[];
}

/** Where one write went: its LSN and, per lane piece, the lane sequence. */
export interface WriteAck {
  readonly lsn: number;
  readonly pieces: readonly { readonly lane: string; readonly seq: number }[];
}

/** WAL metadata of one write: the LSN of its last block, its first LBA and block count. */
export interface ShipLogEntry {
  readonly lsn: number;
  readonly lba: number;
  readonly blocks: number;
}

/** A consistency manifest: the lane cut that corresponds to one LSN of the volume. */
export interface WriterCut {
  readonly lsn: number;
  readonly lanes: Readonly<Record<string, number>>;
}

interface LaneState extends DownstreamLane {
  readonly spec: LaneSpec;
  readonly senders: CreditSender[];
  readonly edges: Map<string, CreditSender>;
  /** What each first hop's current incarnation receipted; the writer may forget a unit all of them hold. */
  readonly obligations: LaneObligations;
  readonly sendLogs: Map<string, SendLog>;
  /** Units sent and not yet receipted by every first hop (the writer re-sends them when lost). */
  readonly retention: UnitRetention;
  /** Next sequence to assign. */
  next: number;
  pending: WriteRecord[];
  pendingBytes: number;
  pendingTs: number[];
  /** Sequences per holder proven by verified receipts (monotone: protection, once proven, was proven). */
  readonly proven: Map<string, RangeSet>;
  /** Commit runs not yet published as progress: [first, last, committedAt, bytes]. */
  runs: [number, number, number, number][];
  /** Highest sequence the controller confirmed for every required scenario, on fresh evidence. */
  confirmed: number;
}

interface Waiter {
  contract: string;
  target: Record<string, number>;
  resolve: () => void;
  reject: (e: unknown) => void;
  timer?: unknown;
}

/**
 * The volume writer's working parts behind its machine: SmartWAL writes, lane units built from
 * the write's own buffer (G4: never re-read from the extent), AES-256-GCM sealing, credited fan-out
 * to first-hop holders, receipt folding into per-lane protection, and contract-aware sync.
 */
export class WriterCore {
  readonly counters: Counters;
  private readonly lanes = new Map<string, LaneState>();
  private readonly ordered: LaneState[];
  private readonly subs: TransportSubscription[] = [];
  private readonly waiters = new Set<Waiter>();
  private readonly cuts: WriterCut[] = [];
  /** WAL metadata of recent writes (LSN, LBA, blocks — no data), bounded by the volume's WAL window. */
  private readonly ships: ShipLogEntry[] = [];
  private flushQueued = false;
  /** Units waiting for the outbox flush that makes them durable before they are sent. */
  private readonly shipQueue: { l: LaneState; unit: TransportUnit; data: Uint8Array; bytes: number }[] = [];
  private shipScheduled = false;
  private progressTimer: unknown;
  private resendTimer: unknown;
  /** Writes waiting for retained custody bytes to fall under the bound (backpressure). */
  private readonly roomWaiters: (() => void)[] = [];
  private stopped = false;
  /** Highest writer term seen in holders' receipts (greater than ours once a newer writer took over). */
  newestTerm = 0;
  private readonly frontiers: FrontierBacking;

  constructor(
    readonly config: VolumeWriterConfig,
    private readonly ports: VolumeWriterPorts,
    private readonly dispatch: (
      e:
        | { type: "nats.receipt"; lane: string; msg: InboundMessage }
        | { type: "nats.status" | "nats.release"; msg: InboundMessage }
        | { type: "release.checked"; lane: string; holder: string; ranges: RangeSet }
        | { type: "transport.connection"; event: ConnectionEvent },
    ) => void,
  ) {
    checkWriterConfig(config);
    this.counters = ports.counters ?? new Counters();
    this.frontiers = new FrontierBacking(ports.peers);
    for (const spec of config.lanes) {
      const edges = new Map<string, CreditSender>();
      const sendLogs = new Map<string, SendLog>();
      const obligations = new LaneObligations(spec.holders, config.topologyEpoch);
      // The writer answers to no release frontier: a unit may go once every first hop holds it.
      obligations.authorizeRelease(RangeSet.of(0, Number.MAX_SAFE_INTEGER));
      const resendBackoff = new Map<string, number>();
      const lane = { obligations, sendLogs, edges, resendBackoff };
      for (const h of spec.holders) {
        const onReset = (e: { incarnation: number; restarted: boolean }) => {
          this.counters.inc(e.restarted ? "first_hop_restarted" : "first_hop_new_window");
          receiverReset(lane, h, e);
        };
        edges.set(h, new CreditSender({ transport: ports.transport, clock: ports.clock, sender: config.writerId, holder: h, volume: config.volume, lane: spec.lane, retryMs: 20, session: config.term, onReset }));
      }
      const first = spec.firstSeq ?? 1;
      const senders = [...edges.values()];
      this.lanes.set(spec.lane, { spec, senders, edges, obligations, sendLogs, resendBackoff, retention: new UnitRetention(), next: first, pending: [], pendingBytes: 0, pendingTs: [], proven: new Map(), runs: [], confirmed: 0 });
    }
    this.ordered = [...this.lanes.values()].sort((a, b) => a.spec.fromLba - b.spec.fromLba);
  }

  /** Subscribes receipts and the controller's status, attaches credit senders and starts progress publication. */
  start(): void {
    for (const l of this.ordered) {
      this.subs.push(this.ports.transport.subscribe(receiptSubject(this.config.volume, l.spec.lane), (msg) => this.dispatch({ type: "nats.receipt", lane: l.spec.lane, msg })));
      for (const s of l.senders) s.attach();
    }
    if (this.retainUntil === "confirmed") this.subs.push(this.ports.transport.subscribe(statusSubject(this.config.volume), (msg) => this.dispatch({ type: "nats.status", msg })));
    // First hops' release frontiers: what the control log released there is owed to them no more.
    const firstHops = new Set(this.ordered.flatMap((l) => [...l.edges.keys()]));
    for (const h of firstHops) this.subs.push(this.ports.transport.subscribe(releaseSubject(h), (msg) => this.dispatch({ type: "nats.release", msg })));
    if (this.ports.recovered !== undefined) this.reship(this.ports.recovered);
    const unwatch = this.ports.transport.onConnection?.((e) => this.dispatch({ type: "transport.connection", event: e }));
    if (unwatch !== undefined) this.subs.push({ subject: "(connection)", unsubscribe: unwatch, drain: async () => unwatch() });
    const resendEvery = Math.max(10, Math.floor(this.resendAfterMs / 2));
    const resend = () => {
      this.resendTimer = undefined;
      if (this.stopped) return;
      this.resendDue();
      this.resendTimer = this.ports.clock.setTimeout(resend, resendEvery);
    };
    this.resendTimer = this.ports.clock.setTimeout(resend, resendEvery);
    const every = this.config.progressIntervalMs ?? 50;
    if (every > 0) {
      const tick = () => {
        this.progressTimer = undefined;
        if (this.stopped) return;
        this.publishProgress();
        this.progressTimer = this.ports.clock.setTimeout(tick, every);
      };
      this.progressTimer = this.ports.clock.setTimeout(tick, every);
    }
  }

  /** Splits `lba..` over the lanes; throws WriteRejectedError when a block lies outside every lane. */
  private split(lba: number, data: Uint8Array): { lane: LaneState; lba: number; data: Uint8Array }[] {
    if (!(data instanceof Uint8Array) || data.length === 0 || data.length % BLOCK_SIZE !== 0) {
      throw new WriteRejectedError(`data must be a positive multiple of ${BLOCK_SIZE} bytes`, { length: (data as Uint8Array)?.length });
    }
    if (!Number.isSafeInteger(lba) || lba < 0) throw new WriteRejectedError("lba must be a non-negative integer", { lba });
    const blocks = data.length / BLOCK_SIZE;
    const out: { lane: LaneState; lba: number; data: Uint8Array }[] = [];
    let at = lba;
    while (at < lba + blocks) {
      const lane = this.ordered.find((l) => l.spec.fromLba <= at && at <= l.spec.toLba);
      if (lane === undefined) throw new WriteRejectedError(`lba ${at} belongs to no lane of ${this.config.volume}`, { lba: at });
      const end = Math.min(lba + blocks - 1, lane.spec.toLba);
      out.push({ lane, lba: at, data: data.subarray((at - lba) * BLOCK_SIZE, (end - lba + 1) * BLOCK_SIZE) });
      at = end + 1;
    }
    return out;
  }

  /**
   * Writes `data` at `lba` through SmartWAL, then — in the same continuation, from the same
   * buffer — appends one record per lane piece to the lane's open unit. Resolves once the volume
   * admitted the write (a local write-back ack; protection is proven later by receipts).
   * Throws WriteRejectedError (counted, nothing written) for a bad request.
   */
  async write(lba: number, data: Uint8Array): Promise<WriteAck> {
    let pieces;
    try {
      pieces = this.split(lba, data);
    } catch (err) {
      this.counters.inc((err as CustodyError).code);
      throw err;
    }
    // Custody off: the same SmartWAL path, nothing shipped.
    if (this.config.custody === false) return { lsn: await this.ports.volume.write(lba, data), pieces: [] };
    // Backpressure: what custody has not yet taken stays bounded; past the bound, writes wait.
    while (this.custodyBacklogBytes() >= this.maxBacklogBytes && !this.stopped) {
      this.counters.inc("write_backpressure");
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
    // Keep our own reference to the buffer: the caller may reuse theirs after we return (G4).
    const own = new Uint8Array(data);
    const lsn = await this.ports.volume.write(lba, own);
    const now = this.ports.clock.now();
    this.ships.push({ lsn, lba, blocks: own.length / BLOCK_SIZE });
    if (this.ships.length > 4096) this.trimShipLog();
    const acked: { lane: string; seq: number }[] = [];
    for (const p of pieces) {
      const l = p.lane;
      const seq = l.next++;
      const rec: WriteRecord = { seq, lsn, lba: p.lba, data: own.subarray((p.lba - lba) * BLOCK_SIZE, (p.lba - lba) * BLOCK_SIZE + p.data.length) };
      l.pending.push(rec);
      l.pendingTs.push(now);
      l.pendingBytes += rec.data.length;
      const last = l.runs[l.runs.length - 1];
      if (last !== undefined && last[1] === seq - 1 && last[2] === now && last[3] === rec.data.length) last[1] = seq;
      else l.runs.push([seq, seq, now, rec.data.length]);
      acked.push({ lane: l.spec.lane, seq });
      if (l.pendingBytes >= (this.config.maxUnitPayloadBytes ?? 64 * 1024)) this.cutUnit(l);
    }
    // A cut spanning lanes carries its manifest: the lane heads that correspond to this LSN.
    if (this.ordered.length > 1) this.noteCut(lsn);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // A zero-delay timer (through the clock seam) lets every write of one group commit land in
      // the same unit: one seal, one digest and one send per batch instead of per write.
      this.ports.clock.setTimeout(() => {
        this.flushQueued = false;
        for (const l of this.ordered) this.cutUnit(l);
      }, 0);
    }
    return { lsn, pieces: acked };
  }

  private noteCut(lsn: number): void {
    const lanes: Record<string, number> = {};
    for (const l of this.ordered) lanes[l.spec.lane] = l.next - 1;
    const prev = this.cuts[this.cuts.length - 1];
    if (prev !== undefined && prev.lsn === lsn) this.cuts[this.cuts.length - 1] = { lsn, lanes };
    else this.cuts.push({ lsn, lanes });
    if (this.cuts.length > 65_536) this.cuts.splice(0, this.cuts.length - 65_536);
  }

  /** Seals the lane's pending records into one encrypted unit and hands it to every first-hop sender. */
  private cutUnit(l: LaneState): void {
    if (l.pending.length === 0) return;
    const recs = l.pending;
    const ts = l.pendingTs;
    l.pending = [];
    l.pendingTs = [];
    l.pendingBytes = 0;
    const id = { volume: this.config.volume, lane: l.spec.lane, term: this.config.term, firstSeq: recs[0]!.seq, lastSeq: recs[recs.length - 1]!.seq };
    const unit = makeTransportUnit({ ...id, commitTs: ts, payload: sealPayload(this.ports.dataKey, id, recs) });
    this.ship(l, unit, true);
  }

  /**
   * Retains `unit` for re-sending and sends it to every first hop — after the outbox made it
   * durable, when there is one (`store`: append it there first).
   */
  private ship(l: LaneState, unit: TransportUnit, store: boolean): void {
    const data = encodeMessage(unitSpec, unit);
    const bytes = unitRecordBytes(unit);
    l.retention.add({ firstSeq: unit.firstSeq, lastSeq: unit.lastSeq, data, bytes });
    l.obligations.admit(unit.firstSeq, unit.lastSeq);
    this.ports.onUnit?.(unit);
    const outbox = this.ports.outbox;
    if (outbox === undefined) return this.send(l, unit, data, bytes);
    if (store) void outbox.append(unit, data).catch(() => this.counters.inc("outbox_append_failed"));
    this.shipQueue.push({ l, unit, data, bytes });
    this.flushOutbox(outbox);
  }

  /** One outbox flush at a time; it sends exactly the units appended before it began. */
  private flushOutbox(outbox: UnitOutbox): void {
    if (this.shipScheduled || this.shipQueue.length === 0) return;
    this.shipScheduled = true;
    const covered = this.shipQueue.length;
    void outbox.flush().then(
      () => {
        this.shipScheduled = false;
        for (const q of this.shipQueue.splice(0, covered)) this.send(q.l, q.unit, q.data, q.bytes);
        this.flushOutbox(outbox);
      },
      () => {
        // Not durable, so not sent: the next unit or sync tries again.
        this.shipScheduled = false;
        this.counters.inc("outbox_flush_failed");
      },
    );
  }

  private send(l: LaneState, unit: TransportUnit, data: Uint8Array, bytes: number): void {
    if (this.stopped) return;
    const now = this.ports.clock.now();
    for (const [h, s] of l.edges) {
      noteSent(l, h, unit.firstSeq, unit.lastSeq, now);
      s.send({ data, bytes });
    }
    this.counters.inc("units_sent");
  }

  /**
   * Ships again, byte for byte, the units an earlier writer process left unconfirmed. They keep
   * the term they were written under: re-sealing them under this term would make a holder that
   * sees them first treat this term as starting at their sequences, and refuse as fenced the same
   * records still arriving under the old term from a downstream holder's disk.
   */
  private reship(recovered: readonly TransportUnit[]): void {
    for (const u of recovered) {
      const l = this.lanes.get(u.lane);
      if (l === undefined || u.volume !== this.config.volume) continue;
      try {
        // Only units that still open with our key, below where this term's own writes begin.
        openPayload(this.ports.dataKey, u, u.payload);
        if (u.term > this.config.term || u.lastSeq >= (l.spec.firstSeq ?? 1)) throw new CustodyError("reship_out_of_history", "recovered unit is not below this term's first sequence", { term: u.term, lastSeq: u.lastSeq });
        this.ship(l, u, false);
        this.counters.inc("units_reshipped");
      } catch (err) {
        this.counters.inc(`reship_${err instanceof CustodyError ? err.code : "failed"}`);
      }
    }
  }

  /**
   * The connection changed. After a reconnect whatever was published meanwhile is gone: credit is
   * asked for again and every unit a first hop has not receipted is re-sent at once.
   */
  connectionChanged(e: ConnectionEvent): void {
    this.counters.inc(`connection_${e}`);
    if (e !== "reconnected") return;
    for (const l of this.ordered) {
      for (const [h, s] of l.edges) {
        s.requestCredit();
        l.sendLogs.get(h)?.reset();
        l.resendBackoff.delete(h);
      }
    }
    this.resendDue();
    this.publishProgress();
  }

  /**
   * Resolves once custody has taken everything this writer retains (every lane's retention empty),
   * or with the sequences still retained when `deadlineMs` passes first. For a graceful stop: the
   * writer keeps re-sending meanwhile.
   */
  async drained(deadlineMs: number): Promise<Record<string, RangeSet>> {
    const until = this.ports.clock.now() + deadlineMs;
    for (;;) {
      const left: Record<string, RangeSet> = {};
      for (const l of this.ordered) if (!l.obligations.retained.isEmpty) left[l.spec.lane] = l.obligations.retained;
      if (Object.keys(left).length === 0 || this.ports.clock.now() >= until) return left;
      await new Promise<void>((resolve) => this.ports.clock.setTimeout(() => resolve(), 50));
    }
  }

  /** Sequences written but not yet confirmed by the controller for every required scenario, worst lane. */
  custodyLagSeqs(): number {
    let lag = 0;
    for (const l of this.ordered) lag = Math.max(lag, l.next - 1 - Math.max(l.confirmed, (l.spec.firstSeq ?? 1) - 1));
    return lag;
  }

  /** Sequences of `lane` the writer still retains for re-sending (in its outbox, when it has one). */
  retainedSeqs(lane: string): RangeSet {
    return this.lanes.get(lane)?.obligations.retained ?? RangeSet.EMPTY;
  }

  /** Retained sequences of `lane` the first hop `holder` still needs (not receipted, not released there). */
  owedTo(lane: string, holder: string): RangeSet {
    return this.lanes.get(lane)?.obligations.pendingFor(holder) ?? RangeSet.EMPTY;
  }

  /** Bytes of custody not yet taken by every first hop: retained units plus records not yet cut. */
  custodyBacklogBytes(): number {
    let n = 0;
    for (const l of this.ordered) n += l.retention.bytes + l.pendingBytes;
    return n;
  }

  private get maxBacklogBytes(): number {
    return this.config.maxCustodyBacklogBytes ?? 64 * 1024 * 1024;
  }

  private get resendAfterMs(): number {
    return this.config.resendAfterMs ?? 1000;
  }

  /** Re-sends, per first hop, retained units it has not receipted a while after their last send (gap repair). */
  resendDue(): void {
    const now = this.ports.clock.now();
    for (const l of this.ordered) {
      for (const d of dueResends(l, now, this.resendAfterMs)) {
        for (const u of l.retention.within(d.seqs)) {
          d.sender.send({ data: u.data, bytes: u.bytes });
          noteSent(l, d.edge, u.firstSeq, u.lastSeq, now);
          this.counters.inc("retransmit");
        }
        noteResent(l, d.edge);
      }
    }
  }

  private get retainUntil(): "receipted" | "confirmed" {
    return this.config.retainUntil ?? "confirmed";
  }

  /**
   * The controller's status document: per lane, the cut every required scenario keeps on fresh
   * evidence. Until then the writer keeps its copy, since a first hop's receipt alone does not
   * mean the write survives every scenario of the contract (the first hop may be its only copy).
   */
  handleStatus(msg: InboundMessage): void {
    let doc: VolumeStatus;
    try {
      doc = decodeMessage(volumeStatusSpec, msg.data);
    } catch (err) {
      return this.counters.inc(`status_${err instanceof CustodyError ? err.code : "invalid"}`);
    }
    if (doc.volume !== this.config.volume) return;
    const required = doc.scenarios.filter((x) => x.required);
    for (const l of this.ordered) {
      let cut = Infinity;
      for (const x of required) {
        const c = x.evidence === "observed" ? x.cut?.find(([lane]) => lane === l.spec.lane)?.[1] : undefined;
        cut = Math.min(cut, c ?? -1);
      }
      if (Number.isFinite(cut) && cut > l.confirmed) {
        l.confirmed = cut;
        this.dropReceipted(l);
      }
    }
  }

  /** Forgets units every first hop's current incarnation has receipted (and, by default, the controller confirmed), and lets waiting writes in. */
  private dropReceipted(l: LaneState): void {
    let done = l.obligations.releasable();
    if (this.retainUntil === "confirmed") done = done.intersect(RangeSet.of(0, Math.max(0, l.confirmed)));
    if (done.isEmpty) return;
    const dropped = l.retention.dropPrefix(done);
    if (dropped.isEmpty) return;
    l.obligations.release(dropped);
    void this.ports.outbox?.drop(l.spec.lane, dropped).catch(() => this.counters.inc("outbox_drop_failed"));
    for (const log of l.sendLogs.values()) log.forget(dropped);
    if (this.custodyBacklogBytes() < this.maxBacklogBytes) for (const w of this.roomWaiters.splice(0)) w();
  }

  /**
   * A first hop's release frontier from the control log: what it released there it needs nothing
   * more of, even when its receipt of those units never reached us (lost on the wire, or the
   * units came to it by a refill). Malformed or stale frontiers are counted and change nothing.
   */
  handleEdgeRelease(msg: InboundMessage): void {
    let f;
    try {
      f = decodeMessage(releaseFrontierSpec, msg.data);
    } catch (err) {
      return void this.counters.inc(`edge_release_${err instanceof CustodyError ? err.code : "malformed"}`);
    }
    const l = f.volume === this.config.volume ? this.lanes.get(f.lane) : undefined;
    if (l === undefined || !l.edges.has(f.holder)) return void this.counters.inc("edge_release_not_ours");
    if (f.epoch < this.config.topologyEpoch) return void this.counters.inc("edge_release_stale_epoch");
    const ranges = RangeSet.fromJSON(f.ranges);
    const { holder, lane } = f;
    if (this.frontiers.backedNow(this.config.volume, lane, holder, ranges)) return this.applyEdgeRelease(l, holder, ranges);
    this.frontiers.catchUp(() => this.dispatch({ type: "release.checked", lane, holder, ranges }));
  }

  /** An edge frontier the log did not back yet, after catching up: only what the log now holds counts. */
  edgeReleaseChecked(lane: string, holder: string, ranges: RangeSet): void {
    const l = this.lanes.get(lane);
    if (l === undefined) return;
    const b = this.frontiers.backed(this.config.volume, lane, holder, ranges);
    if (b.unverified) this.counters.inc("edge_release_unverified");
    if (!b.ranges.isEmpty) this.applyEdgeRelease(l, holder, b.ranges);
  }

  private applyEdgeRelease(l: LaneState, holder: string, ranges: RangeSet): void {
    if (!l.obligations.releasedAtEdge(holder, ranges)) return;
    forgetReceipted(l, holder, true);
    this.dropReceipted(l);
    this.wake();
  }

  /**
   * A signed receipt batch on one of our lanes: verified (key, signature, stream, fence) before
   * it proves anything; a bad batch is counted by its code and changes nothing.
   */
  handleReceipt(lane: string, msg: InboundMessage): void {
    const l = this.lanes.get(lane);
    if (l === undefined) return;
    try {
      const signed = decodeMessage(receiptBatchSpec, msg.data);
      const batch = verifyReceiptBatch(signed, {
        stream: { volume: this.config.volume, lane, subject: receiptSubject(this.config.volume, lane) },
        holderKey: (h, inc) => this.ports.peers.key(h, inc),
        currentIncarnation: (h) => this.ports.peers.incarnation(h),
        topologyEpoch: this.config.topologyEpoch,
        policyGeneration: this.config.policyGeneration,
        released: () => RangeSet.EMPTY,
      });
      const h = batch.holder.holderId;
      let got = l.proven.get(h) ?? RangeSet.EMPTY;
      const firstHop = l.edges.has(h);
      const before = firstHop ? l.obligations.receiptedBy(h) : RangeSet.EMPTY;
      for (const r of batch.receipts) {
        const retained = this.provableByTerm(l, r.writerTerm, r.retained);
        if (retained === undefined) continue;
        got = got.union(retained);
        if (firstHop) {
          const restarted = l.obligations.applyEdgeReceipt({ holder: h, incarnation: batch.holder.incarnation, epoch: r.topologyEpoch, receiptSeq: r.receiptSeq, retained });
          if (restarted) l.sendLogs.get(h)?.reset();
        }
      }
      l.proven.set(h, got);
      if (firstHop) {
        forgetReceipted(l, h, !before.coversAll(l.obligations.receiptedBy(h)));
        this.dropReceipted(l);
      }
    } catch (err) {
      this.counters.inc(`receipt_${err instanceof CustodyError ? err.code : "invalid"}`);
      return;
    }
    this.wake();
    this.ports.onReceipt?.(lane);
  }

  /**
   * What a receipt stated under `writerTerm` proves for this writer, or undefined when nothing.
   * Our own term proves all it states. A newer term means we were fenced: after failover the same
   * sequences belong to the newer history. An older term (a holder that has not yet seen a unit of
   * ours) still proves the shared history below our first sequence — the units an earlier process
   * of this writer left unconfirmed, which we re-ship under their own term.
   */
  private provableByTerm(l: LaneState, writerTerm: number, retained: RangeSet): RangeSet | undefined {
    if (writerTerm === this.config.term) return retained;
    if (writerTerm > this.config.term) this.newestTerm = Math.max(this.newestTerm, writerTerm);
    const below = writerTerm < this.config.term ? retained.intersect(RangeSet.of(0, Math.max(0, (l.spec.firstSeq ?? 1) - 1))) : RangeSet.EMPTY;
    if (below.isEmpty) {
      this.counters.inc("receipt_other_term");
      return undefined;
    }
    return below;
  }

  /** Highest `s` such that every sequence of `lane` from its first through `s` is proven under `contract`. */
  protectedThrough(contract: string, lane: string): number {
    const ct = this.config.contracts.find((c) => c.name === contract);
    if (ct === undefined) throw new UnknownContractError(contract);
    const l = this.lanes.get(lane);
    if (l === undefined) throw new WriteRejectedError(`unknown lane ${lane}`, { lane });
    const base = l.spec.firstSeq ?? 1;
    return protectedSeqs(l.proven, this.config.holderSites, ct).contiguousThrough(base);
  }

  /** Lane heads now (the highest sequence assigned on each lane). */
  heads(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of this.ordered) out[l.spec.lane] = l.next - 1;
    return out;
  }

  /** Consistency manifests of recent multi-lane cuts, oldest first. */
  manifests(): readonly WriterCut[] {
    return this.cuts;
  }

  /**
   * Local sync: the volume's SyncCache (no WAN wait). With `contract`, additionally waits until
   * receipts prove every write admitted before the call under that contract; rejects with
   * ProtectionTimeoutError after `timeoutMs`, UnknownContractError for an unknown name.
   */
  async sync(contract?: string, timeoutMs = 10_000): Promise<{ durableLsn: number; heads: Record<string, number> }> {
    if (contract !== undefined && !this.config.contracts.some((c) => c.name === contract)) {
      this.counters.inc("unknown_contract");
      throw new UnknownContractError(contract);
    }
    const target = this.heads();
    for (const l of this.ordered) this.cutUnit(l);
    // The local sync covers the outbox too: an acknowledged write is durable in both.
    const [durableLsn] = await Promise.all([this.ports.volume.syncCache(), this.ports.outbox?.flush()]);
    if (contract !== undefined) await this.waitProtected(contract, target, timeoutMs);
    return { durableLsn, heads: target };
  }

  private satisfied(w: Waiter): boolean {
    return Object.entries(w.target).every(([lane, head]) => head < (this.lanes.get(lane)!.spec.firstSeq ?? 1) || this.protectedThrough(w.contract, lane) >= head);
  }

  private waitProtected(contract: string, target: Record<string, number>, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { contract, target, resolve, reject };
      if (this.satisfied(w)) return resolve();
      w.timer = this.ports.clock.setTimeout(() => {
        this.waiters.delete(w);
        this.counters.inc("protection_timeout");
        reject(new ProtectionTimeoutError({ contract, target, proven: Object.fromEntries(Object.keys(target).map((l) => [l, this.protectedThrough(contract, l)])) }));
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) {
      if (!this.satisfied(w)) continue;
      this.waiters.delete(w);
      if (w.timer !== undefined) this.ports.clock.clearTimeout(w.timer);
      w.resolve();
    }
  }

  /** Publishes what was written since the last progress message (for the controller's RPO). */
  publishProgress(): void {
    const lanes = this.ordered.map((l) => ({ lane: l.spec.lane, head: l.next - 1, runs: l.runs.splice(0, 4096) }));
    this.ports.transport.publish(
      eventSubject(this.config.volume),
      encodeMessage(writerProgressSpec, { writer: this.config.writerId, volume: this.config.volume, term: this.config.term, lanes, at: this.ports.clock.now() }),
    );
  }

  private trimShipLog(): void {
    const start = this.ports.volume.walWindow().start;
    let drop = 0;
    while (drop < this.ships.length && this.ships[drop]!.lsn < start) drop++;
    if (drop > 0) this.ships.splice(0, drop);
  }

  /**
   * WAL metadata of writes after `lsn` still inside the volume's WAL window (what a replica's WAL
   * catch-up replays; the data is re-read from the extent, memo 4.4).
   */
  walRecordsAfter(lsn: number): ShipLogEntry[] {
    this.trimShipLog();
    return this.ships.filter((e) => e.lsn > lsn);
  }

  /** Credit backlog per lane and holder (units waiting for credit). */
  backlog(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of this.ordered) l.spec.holders.forEach((h, i) => (out[`${l.spec.lane}/${h}`] = l.senders[i]!.backlog.units));
    return out;
  }

  /** Fails every pending protected sync (the writer was fenced or stopped). */
  failWaiters(err: unknown): void {
    for (const w of this.waiters) {
      if (w.timer !== undefined) this.ports.clock.clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiters.clear();
  }

  /** Unsubscribes and stops timers and senders. Idempotent. Queued units are dropped with the writer. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const s of this.subs) s.unsubscribe();
    for (const l of this.ordered) for (const s of l.senders) s.close();
    if (this.progressTimer !== undefined) this.ports.clock.clearTimeout(this.progressTimer);
    if (this.resendTimer !== undefined) this.ports.clock.clearTimeout(this.resendTimer);
    for (const w of this.roomWaiters.splice(0)) w();
  }
}
