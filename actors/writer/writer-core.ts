import { Counters, CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { receiptBatchSpec, verifyReceiptBatch, writerUnitSigner } from "../../custody/index.ts";
import {
  decodeMessage,
  encodeMessage,
  eventSubject,
  receiptSubject,
  releaseFrontierSpec,
  releaseSubject,
  statusSubject,
  volumeStatusSpec,
  writerProgressSpec,
  type WriteRecord,
} from "../../transport/protocol/index.ts";
import type { ConnectionEvent, InboundMessage, TransportSubscription } from "../../transport/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";
import { protectedSeqs } from "./protection.ts";
import { provableByTerm } from "./receipt-terms.ts";
import { confirmedCuts } from "./confirmed-cut.ts";
import { dueResends, forgetReceipted, FrontierBacking, noteResent, noteSent } from "../hop/index.ts";
import {
  checkWriterConfig,
  UnknownContractError,
  WriteRejectedError,
  type VolumeWriterConfig,
} from "./writer-config.ts";
import { ProtectionWaiters } from "./protection-waiters.ts";
import { ShipLog } from "./ship-log.ts";
import { UnitShipper } from "./unit-shipping.ts";
import { ManifestShipper } from "./manifest-shipping.ts";
import { openWriterLane, splitWrite, type WriterLane } from "./writer-lane.ts";
import { CoalescingConsumer, openCoalescedStream } from "./coalescing-consumer.ts";
import type { VolumeWriterPorts, WriteAck, WriterCut, ShipLogEntry, WriterDispatch } from "./writer-ports.ts";

export type { VolumeWriterPorts, WriteAck, WriterCut, ShipLogEntry } from "./writer-ports.ts";

/**
 * The volume writer's working parts behind its machine: SmartWAL writes, lane units built from
 * the write's own buffer (G4: never re-read from the extent), AES-256-GCM sealing, credited fan-out
 * to first-hop holders, receipt folding into per-lane protection, and contract-aware sync.
 */
export class WriterCore {
  readonly counters: Counters;
  private readonly lanes = new Map<string, WriterLane>();
  private readonly ordered: WriterLane[];
  private readonly all: WriterLane[]; // raw and derived (coalesced) lanes; derived ones take no writes
  private readonly coalescing: CoalescingConsumer | undefined;
  private readonly subs: TransportSubscription[] = [];
  private readonly waiters: ProtectionWaiters;
  private readonly cuts: WriterCut[] = [];
  private readonly ships: ShipLog;
  private readonly shipper: UnitShipper;
  private readonly manifestShipper: ManifestShipper;
  private flushQueued = false;
  /** Writes waiting for retained custody bytes to fall under the bound (backpressure). */
  private readonly roomWaiters: (() => void)[] = [];
  private stopped = false;
  /** Highest writer term seen in holders' receipts (greater than ours once a newer writer took over). */
  newestTerm = 0;
  private readonly frontiers: FrontierBacking;

  constructor(
    readonly config: VolumeWriterConfig,
    private readonly ports: VolumeWriterPorts,
    private readonly dispatch: WriterDispatch,
  ) {
    checkWriterConfig(config);
    this.counters = ports.counters ?? new Counters();
    this.frontiers = new FrontierBacking(ports.peers);
    const seams = {
      transport: ports.transport,
      clock: ports.clock,
      counters: this.counters,
      peers: ports.peers,
      attest: ports.writerKey === undefined ? undefined : writerUnitSigner(ports.writerKey),
    };
    for (const spec of config.lanes) this.lanes.set(spec.lane, openWriterLane(spec, config, seams));
    this.ordered = [...this.lanes.values()].sort((a, b) => a.spec.fromLba - b.spec.fromLba);
    this.coalescing = openCoalescedStream(
      config,
      this.lanes,
      { ...seams, heads: () => this.heads(), repeatMs: this.resendAfterMs },
      (l, p) => this.shipper.cutDerived(l, p),
    );
    this.all = [...this.lanes.values()];
    this.waiters = new ProtectionWaiters(
      {
        protectedThrough: (c, lane) => this.protectedThrough(c, lane),
        firstSeq: (lane) => this.lanes.get(lane)!.spec.firstSeq ?? 1,
      },
      ports.clock,
      this.counters,
    );
    this.ships = new ShipLog(() => ports.volume.walWindow().start);
    this.shipper = new UnitShipper(config, ports, this.counters, () => this.stopped);
    this.manifestShipper = new ManifestShipper(
      config,
      { transport: ports.transport, clock: ports.clock, counters: this.counters },
      this.resendAfterMs,
    );
  }

  /** Subscribes receipts and the controller's status, attaches credit senders and starts progress publication. */
  start(): void {
    for (const l of this.all) {
      this.subs.push(
        this.ports.transport.subscribe(receiptSubject(this.config.volume, l.spec.lane), (msg) =>
          this.dispatch({ type: "nats.receipt", lane: l.spec.lane, msg }),
        ),
      );
      for (const s of l.senders) s.attach();
    }
    if (this.retainUntil === "confirmed")
      this.subs.push(
        this.ports.transport.subscribe(statusSubject(this.config.volume), (msg) =>
          this.dispatch({ type: "nats.status", msg }),
        ),
      );
    // First hops' release frontiers: what the control log released there is owed to them no more.
    const firstHops = new Set(this.all.flatMap((l) => [...l.edges.keys()]));
    for (const h of firstHops)
      this.subs.push(
        this.ports.transport.subscribe(releaseSubject(h), (msg) => this.dispatch({ type: "nats.release", msg })),
      );
    if (this.ports.recovered !== undefined) this.shipper.reship(this.lanes, this.ports.recovered);
    const unwatch = this.ports.transport.onConnection?.((e) =>
      this.dispatch({ type: "transport.connection", event: e }),
    );
    if (unwatch !== undefined)
      this.subs.push({ subject: "(connection)", unsubscribe: unwatch, drain: async () => unwatch() });
    this.dispatch({ type: "timer.arm", ms: this.resendEveryMs, event: { type: "timer.resend" } });
    if (this.progressEveryMs > 0)
      this.dispatch({ type: "timer.arm", ms: this.progressEveryMs, event: { type: "timer.progress" } });
  }

  /** How often unreceipted units are checked for a resend (`timer.resend`). */
  get resendEveryMs(): number {
    return Math.max(10, Math.floor(this.resendAfterMs / 2));
  }

  /** How often progress is published (`timer.progress`; 0: never). */
  get progressEveryMs(): number {
    return this.config.progressIntervalMs ?? 50;
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
      pieces = splitWrite(this.ordered, this.config.volume, lba, data);
    } catch (err) {
      this.counters.inc((err as CustodyError).code);
      throw err;
    }
    // Custody off: the same SmartWAL path, nothing shipped.
    if (this.config.custody === false) return { lsn: await this.ports.volume.write(lba, data), pieces: [] };
    // Backpressure: what custody has not yet taken stays bounded; past the bound, writes wait —
    // and a write that comes while others wait queues behind them, so writes reach the volume
    // (and get their LSNs and lane sequences) in the order they were made.
    while ((this.custodyBacklogBytes() >= this.maxBacklogBytes || this.roomWaiters.length > 0) && !this.stopped) {
      this.counters.inc("write_backpressure");
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
    // Keep our own reference to the buffer: the caller may reuse theirs after we return (G4).
    const own = new Uint8Array(data);
    const lsn = await this.ports.volume.write(lba, own);
    const now = this.ports.clock.now();
    this.ships.push({ lsn, lba, blocks: own.length / BLOCK_SIZE });
    const acked: { lane: string; seq: number }[] = [];
    for (const [i, p] of pieces.entries()) {
      const l = p.lane;
      const seq = l.next++;
      const rec: WriteRecord = {
        seq,
        lsn,
        lba: p.lba,
        data: own.subarray((p.lba - lba) * BLOCK_SIZE, (p.lba - lba) * BLOCK_SIZE + p.data.length),
      };
      l.pending.push(rec);
      this.coalescing?.note(l.spec.lane, rec, now, i === pieces.length - 1);
      l.pendingTs.push(now);
      l.pendingBytes += rec.data.length;
      const last = l.runs[l.runs.length - 1];
      if (last !== undefined && last[1] === seq - 1 && last[2] === now && last[3] === rec.data.length) last[1] = seq;
      else l.runs.push([seq, seq, now, rec.data.length]);
      acked.push({ lane: l.spec.lane, seq });
      if (l.pendingBytes >= (this.config.maxUnitPayloadBytes ?? 64 * 1024)) this.shipper.cutUnit(l);
    }
    // A cut spanning lanes carries its manifest: the lane heads that correspond to this LSN.
    if (this.ordered.length > 1) this.noteCut(lsn);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // A zero-delay timer lets every write of one group commit land in the same unit (one seal,
      // digest and send per batch). A plain clock timer, not a machine event: it is on every write's
      // path, where a round through the machine cost ~10% more writer CPU per write (bench:e2e).
      this.ports.clock.setTimeout(() => this.cutUnits(), 0);
    }
    return { lsn, pieces: acked };
  }

  /** Closes the units the writes since the last cut went into (one group commit's). */
  private cutUnits(): void {
    this.flushQueued = false;
    for (const l of this.ordered) this.shipper.cutUnit(l);
    this.coalescing?.tick();
  }

  private noteCut(lsn: number): void {
    const lanes: Record<string, number> = {};
    for (const l of this.ordered) lanes[l.spec.lane] = l.next - 1;
    const prev = this.cuts[this.cuts.length - 1];
    if (prev !== undefined && prev.lsn === lsn) this.cuts[this.cuts.length - 1] = { lsn, lanes };
    else this.cuts.push({ lsn, lanes });
    if (this.cuts.length > 65_536) this.cuts.splice(0, this.cuts.length - 65_536);
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
      this.coalescing?.flush(); // a graceful stop does not wait for the coalesced stream's cadence
      const left: Record<string, RangeSet> = {};
      for (const l of this.all) if (!l.obligations.retained.isEmpty) left[l.spec.lane] = l.obligations.retained;
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
    for (const l of this.all) {
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
    let cuts: [WriterLane, number][];
    try {
      cuts = confirmedCuts(decodeMessage(volumeStatusSpec, msg.data), this.config.volume, this.ordered);
    } catch (err) {
      return this.counters.inc(`status_${err instanceof CustodyError ? err.code : "invalid"}`);
    }
    for (const [l, cut] of cuts) {
      if (cut > l.confirmed) {
        l.confirmed = cut;
        this.dropReceipted(l);
      }
    }
  }

  /**
   * Forgets units every first hop's current incarnation has receipted (and, by default, the controller confirmed), and
   * lets waiting writes in.
   */
  private dropReceipted(l: WriterLane): void {
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
    if (this.frontiers.backedNow(this.config.volume, lane, holder, ranges))
      return this.applyEdgeRelease(l, holder, ranges);
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

  private applyEdgeRelease(l: WriterLane, holder: string, ranges: RangeSet): void {
    if (!l.obligations.releasedAtEdge(holder, ranges)) return;
    forgetReceipted(l, holder, true);
    this.dropReceipted(l);
    this.waiters.wake();
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
        const retained = this.provable(l, r.writerTerm, r.retained);
        if (retained === undefined) continue;
        got = got.union(retained);
        if (firstHop) {
          const restarted = l.obligations.applyEdgeReceipt({
            holder: h,
            incarnation: batch.holder.incarnation,
            epoch: r.topologyEpoch,
            receiptSeq: r.receiptSeq,
            retained,
          });
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
    this.waiters.wake();
    this.ports.onReceipt?.(lane);
  }

  /** {@link provableByTerm}, noting a newer term (we were fenced) and counting receipts that prove nothing. */
  private provable(l: WriterLane, writerTerm: number, retained: RangeSet): RangeSet | undefined {
    if (writerTerm > this.config.term) this.newestTerm = Math.max(this.newestTerm, writerTerm);
    const proven = provableByTerm(writerTerm, this.config.term, l.spec.firstSeq ?? 1, retained);
    if (proven === undefined) this.counters.inc("receipt_other_term");
    return proven;
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
    for (const l of this.ordered) this.shipper.cutUnit(l);
    // The local sync covers the outbox too: an acknowledged write is durable in both.
    const [durableLsn] = await Promise.all([this.ports.volume.syncCache(), this.ports.outbox?.flush()]);
    if (contract !== undefined) await this.waiters.wait(contract, target, timeoutMs);
    return { durableLsn, heads: target };
  }

  /** Publishes what was written since the last progress message (for the controller's RPO). */
  publishProgress(): void {
    // A volume spanning lanes also ships its newest consistency manifest to the lanes' holders.
    this.coalescing?.tick(); // the coalesced stream's `windowMs` cadence rides on this timer
    this.manifestShipper.ship(this.cuts, this.ordered);
    const lanes = this.ordered.map((l) => ({ lane: l.spec.lane, head: l.next - 1, runs: l.runs.splice(0, 4096) }));
    const progress = {
      writer: this.config.writerId,
      volume: this.config.volume,
      term: this.config.term,
      lanes,
      at: this.ports.clock.now(),
    };
    this.ports.transport.publish(eventSubject(this.config.volume), encodeMessage(writerProgressSpec, progress));
  }

  /**
   * WAL metadata of writes after `lsn` still inside the volume's WAL window (what a replica's WAL
   * catch-up replays; the data is re-read from the extent, memo 4.4).
   */
  walRecordsAfter(lsn: number): ShipLogEntry[] {
    return this.ships.after(lsn);
  }

  /** Credit backlog per lane and holder (units waiting for credit). */
  backlog(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of this.ordered)
      l.spec.holders.forEach((h, i) => (out[`${l.spec.lane}/${h}`] = l.senders[i]!.backlog.units));
    return out;
  }

  /** Fails every pending protected sync (the writer was fenced or stopped). */
  failWaiters(err: unknown): void {
    this.waiters.failAll(err);
  }

  /** Unsubscribes and stops timers and senders. Idempotent. Queued units are dropped with the writer. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const s of this.subs) s.unsubscribe();
    for (const l of this.all) for (const s of l.senders) s.close();
    for (const w of this.roomWaiters.splice(0)) w();
  }
}
