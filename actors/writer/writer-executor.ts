import { unitRecordBytes } from "../../arena/index.ts";
import { Counters, CustodyError } from "../../core/index.ts";
import { receiptBatchSpec, verifyReceiptBatch, writerUnitSigner } from "../../custody/index.ts";
import { makeTransportUnit, RangeSet, type TransportUnit } from "../../lanes/index.ts";
import {
  decodeMessage,
  encodeMessage,
  openCoalescedPayload,
  openPayload,
  receiptSubject,
  releaseSubject,
  sealPayload,
  statusSubject,
  unitSpec,
  type WriteRecord,
} from "../../transport/protocol/index.ts";
import type { InboundMessage, TransportSubscription } from "../../transport/index.ts";
import { believesIncarnation, CreditSender, FrontierBacking } from "../hop/index.ts";
import { derivedLaneSpecs } from "./coalesced-stream.ts";
import { openCoalescedStream, type CoalescingConsumer } from "./coalescing-consumer.ts";
import {
  ProtectionTimeoutError,
  UnknownContractError,
  WriterFencedError,
  WriteRejectedError,
  type VolumeWriterConfig,
} from "./writer-config.ts";
import type { WriterEffect, WriterRefusal } from "./writer-effects.ts";
import { edgeKey, type ReceiptArrival, type WalWritten, type WriterEvent } from "./writer-events.ts";
import type { VolumeWriterPorts } from "./writer-ports.ts";
import { laneHeads, resendAfterMs, stillRetains, type WriterState } from "./writer-state.ts";

/** Where the outcome of a write or sync goes (the caller's promise). */
export interface Reply {
  resolve(value: never): void;
  reject(err: unknown): void;
}

/** The error a refusal stands for. */
export function refusalError(r: WriterRefusal): CustodyError {
  switch (r.kind) {
    case "fenced":
      return new WriterFencedError(r.detail);
    case "rejected":
      return new WriteRejectedError(r.message, r.detail);
    case "unknown_contract":
      return new UnknownContractError(r.contract);
    case "protection_timeout":
      return new ProtectionTimeoutError(r.detail);
  }
}

/**
 * The writer's executors: the only part that touches the transport, the volume, the outbox, the
 * data key and the clock. They run the step's effects, keep the callers' replies by id, and turn
 * inbound messages and I/O completions into events (`deliver`). Credit senders (one per first hop
 * of each lane) and the coalescing consumer are transport-side workers owned here, outside the
 * machine's context; what to send and when is the step's.
 */
export class WriterExecutor {
  readonly counters: Counters;
  private readonly replies = new Map<number, Reply>();
  private nextId = 1;
  private readonly senders = new Map<string, Map<string, CreditSender>>();
  private readonly frontiers: FrontierBacking;
  private readonly coalescing: CoalescingConsumer | undefined;
  /** Raw lane heads as far as the coalescing consumer has been given records (its consistent cut). */
  private readonly coalescedHeads: Record<string, number>;
  private readonly subs: TransportSubscription[] = [];
  private written: WalWritten[] = [];
  private failed = 0;
  /** Receipt batches of this turn, in arrival order, not yet sent to the machine. */
  private arrivals: ReceiptArrival[] = [];
  private stopped = false;

  constructor(
    private readonly config: VolumeWriterConfig,
    private readonly ports: VolumeWriterPorts,
    initial: WriterState,
    /** Sends an event to the machine (or settles what it carries when the machine has stopped). */
    private readonly deliver: (e: WriterEvent) => void,
    private readonly read: () => WriterState,
  ) {
    this.counters = ports.counters ?? new Counters();
    this.frontiers = new FrontierBacking(ports.peers);
    const attest = ports.writerKey === undefined ? undefined : writerUnitSigner(ports.writerKey);
    for (const name of initial.all) {
      const spec = initial.lanes[name]!.spec;
      const m = new Map<string, CreditSender>();
      for (const h of spec.holders) m.set(h, this.openSender(name, h, attest));
      this.senders.set(name, m);
    }
    this.coalescedHeads = laneHeads(initial);
    this.coalescing = openCoalescedStream(
      config,
      { ...ports, counters: this.counters, heads: () => this.coalescedHeads, repeatMs: resendAfterMs(initial) },
      (p) => this.seal(p.lane, p.firstSeq, p.lastSeq, p.records, p.commitTs),
    );
  }

  private openSender(lane: string, holder: string, attest: ReturnType<typeof writerUnitSigner> | undefined) {
    const peers = this.ports.peers;
    const count = (code: string) => this.counters.inc(`credit_${code}`);
    return new CreditSender({
      transport: this.ports.transport,
      clock: this.ports.clock,
      sender: this.config.writerId,
      holder,
      volume: this.config.volume,
      lane,
      retryMs: 20,
      session: this.config.term,
      onReset: (e) =>
        this.send({ type: "edge.reset", lane, holder, incarnation: e.incarnation, restarted: e.restarted }),
      onMalformed: count,
      onRefused: count,
      believes: peers === undefined ? undefined : (inc: number) => believesIncarnation(peers, holder, inc),
      attest,
    });
  }

  /** Sends `e` to the machine, after the receipt batches that arrived before it (events keep arrival order). */
  private send(e: WriterEvent): void {
    if (this.arrivals.length > 0) this.sendArrivals();
    this.deliver(e);
  }

  /** The first receipt batch of a turn sends them all at the end of it, as one event. */
  private arrived(a: ReceiptArrival): void {
    if (this.arrivals.push(a) === 1) queueMicrotask(() => this.sendArrivals());
  }

  private sendArrivals(): void {
    const batches = this.arrivals;
    if (batches.length === 0) return;
    this.arrivals = [];
    this.deliver(batches.length === 1 ? batches[0]! : { type: "receipts", batches });
  }

  /** Keeps `reply` and returns the id events carry for it. */
  keep(reply: Reply): number {
    const id = this.nextId++;
    this.replies.set(id, reply);
    return id;
  }

  private settle(id: number, value: unknown, err?: unknown): void {
    const r = this.replies.get(id);
    if (r === undefined) return;
    this.replies.delete(id);
    if (err === undefined) r.resolve(value as never);
    else r.reject(err);
  }

  /** First hops (`lane/holder`) whose credit sender still has units queued. */
  busy(): string[] {
    const out: string[] = [];
    for (const [lane, m] of this.senders) for (const [h, s] of m) if (s.backlog.units > 0) out.push(edgeKey(lane, h));
    return out;
  }

  /** Runs one effect of the step. */
  execute(e: WriterEffect): void {
    switch (e.type) {
      case "count":
        return this.counters.inc(e.name, e.by);
      case "reply":
        return this.settle(e.id, e.value);
      case "refuse":
        return this.settle(e.id, undefined, refusalError(e.refusal));
      case "walWrite":
        return this.walWrite(e.id, e.lba, e.data);
      case "seal":
        return this.seal(e.lane, e.firstSeq, e.lastSeq, e.records, e.commitTs);
      case "send": {
        const { lane, unit } = e;
        // Custody of a unit waiting for credit may end meanwhile (receipted, or released there): then it is not sent.
        const wanted = () => {
          const l = this.read().lanes[lane];
          return l !== undefined && stillRetains(l, unit.firstSeq);
        };
        for (const s of this.senders.get(lane)?.values() ?? []) s.send({ data: unit.data, bytes: unit.bytes, wanted });
        return;
      }
      case "resend": {
        const s = this.senders.get(e.lane)?.get(e.holder);
        for (const u of e.units) s?.send({ data: u.data, bytes: u.bytes });
        return;
      }
      case "requestCredit":
        return this.senders.get(e.lane)?.get(e.holder)?.requestCredit();
      default:
        return this.executeMore(e);
    }
  }

  private executeMore(e: WriterEffect): void {
    switch (e.type) {
      case "outboxFlush":
        return this.flushOutbox(e.covered);
      case "outboxDrop":
        void this.ports.outbox?.drop(e.lane, e.seqs).catch(() => this.counters.inc("outbox_drop_failed"));
        return;
      case "syncLocal":
        return this.syncLocal(e);
      case "publish":
        if (e.headers === undefined) this.ports.transport.publish(e.subject, e.payload);
        else this.ports.transport.publish(e.subject, e.payload, { headers: e.headers });
        return;
      case "backRelease":
        return this.backRelease(e.lane, e.holder, e.ranges);
      case "coalesce":
        for (const n of e.notes) {
          this.coalescedHeads[n.lane] = n.rec.seq;
          this.coalescing?.note(n.lane, n.rec, n.at, n.endOfWrite);
        }
        return;
      case "coalesceTick":
        return this.coalescing?.tick();
      case "receiptFolded":
        return this.ports.onReceipt?.(e.lane);
      default:
        return; // schedule / cancel: the machine's own
    }
  }

  /**
   * SmartWAL write of `data`: with custody on, the writer's own copy, taken by `write()` at the call (with
   * custody off the caller's buffer, which it may reuse once answered).
   * Completions of one turn go to the machine as one `wal.written` batch.
   */
  private walWrite(id: number, lba: number, data: Uint8Array): void {
    this.ports.volume.write(lba, data).then(
      (lsn) => {
        this.written.push({ id, lba, data, lsn });
        this.completed();
      },
      (err: unknown) => {
        this.settle(id, undefined, err);
        this.failed++;
        this.completed();
      },
    );
  }

  /** The first SmartWAL completion of a turn sends them all at the end of it, as one batch. */
  private completed(): void {
    if (this.written.length + this.failed > 1) return;
    queueMicrotask(() => {
      const writes = this.written;
      const failed = this.failed;
      this.written = [];
      this.failed = 0;
      this.send({ type: "wal.written", nowMs: this.ports.clock.now(), writes, failed });
    });
  }

  /** Seals records into one encrypted unit of `lane` (raw or derived) and ships it. */
  private seal(
    lane: string,
    firstSeq: number,
    lastSeq: number,
    records: readonly WriteRecord[],
    ts: readonly number[],
  ) {
    const id = { volume: this.config.volume, lane, term: this.config.term, firstSeq, lastSeq };
    const payload = sealPayload(this.ports.dataKey, id, records as WriteRecord[]);
    this.ship(lane, makeTransportUnit({ ...id, commitTs: [...ts], payload }), true);
  }

  /** Encodes `unit`, appends it to the outbox (`store`) and hands it to the machine to retain and send. */
  private ship(lane: string, unit: TransportUnit, store: boolean): void {
    const data = encodeMessage(unitSpec, unit);
    const bytes = unitRecordBytes(unit);
    this.ports.onUnit?.(unit);
    const outbox = this.ports.outbox;
    if (store && outbox !== undefined)
      void outbox.append(unit, data).catch(() => this.counters.inc("outbox_append_failed"));
    const retained = { firstSeq: unit.firstSeq, lastSeq: unit.lastSeq, data, bytes };
    this.send({ type: "unit.sealed", nowMs: this.ports.clock.now(), lane, unit: retained });
  }

  /** One outbox flush: it covers exactly the units appended before it began. */
  private flushOutbox(covered: number): void {
    const outbox = this.ports.outbox;
    if (outbox === undefined) return;
    outbox.flush().then(
      () => this.send({ type: "outbox.flushed", nowMs: this.ports.clock.now(), covered }),
      () => this.send({ type: "outbox.failed" }),
    );
  }

  /** The local sync: the volume's SyncCache and the outbox (an acknowledged write is durable in both). */
  private syncLocal(e: Extract<WriterEffect, { type: "syncLocal" }>): void {
    const { id, contract, target, timeoutMs } = e;
    Promise.all([this.ports.volume.syncCache(), this.ports.outbox?.flush()]).then(
      ([durableLsn]) => this.send({ type: "sync.local", id, durableLsn, contract, target, timeoutMs }),
      (err: unknown) => this.settle(id, undefined, err),
    );
  }

  /** A first hop's frontier counts as far as the control log backs it (caught up with first when needed). */
  private backRelease(lane: string, holder: string, ranges: RangeSet): void {
    const volume = this.config.volume;
    if (this.frontiers.backedNow(volume, lane, holder, ranges))
      return this.send({ type: "release.checked", lane, holder, ranges, unverified: false });
    this.frontiers.catchUp(() => {
      const b = this.frontiers.backed(volume, lane, holder, ranges);
      this.send({ type: "release.checked", lane, holder, ranges: b.ranges, unverified: b.unverified });
    });
  }

  /** Settles what an event carries once the machine has stopped (it takes no events then). */
  orphaned(e: WriterEvent): void {
    const stopped = () => new WriterFencedError({ term: this.config.term, reason: "stopped" });
    if (e.type === "write") this.settle(e.id, undefined, stopped());
    else if (e.type === "writes") for (const w of e.writes) this.settle(w.id, undefined, stopped());
    else if (e.type === "wal.written") for (const w of e.writes) this.settle(w.id, undefined, stopped());
    else if (e.type === "sync.local") {
      if (e.contract === undefined) this.settle(e.id, { durableLsn: e.durableLsn, heads: { ...e.target } });
      else this.settle(e.id, undefined, stopped());
    }
  }

  /** Subscribes receipts, status and first hops' release frontiers, attaches the senders, re-ships recovered units. */
  start(state: WriterState): void {
    const t = this.ports.transport;
    for (const lane of state.all) {
      this.subs.push(t.subscribe(receiptSubject(this.config.volume, lane), (msg) => this.receipt(lane, msg)));
      for (const s of this.senders.get(lane)!.values()) s.attach();
    }
    if ((this.config.retainUntil ?? "confirmed") === "confirmed")
      this.subs.push(
        t.subscribe(statusSubject(this.config.volume), (m) => this.send({ type: "nats.status", data: m.data })),
      );
    // First hops' release frontiers: what the control log released there is owed to them no more.
    const firstHops = new Set(state.all.flatMap((l) => state.lanes[l]!.spec.holders));
    for (const h of firstHops)
      this.subs.push(t.subscribe(releaseSubject(h), (m) => this.send({ type: "nats.release", data: m.data })));
    if (this.ports.recovered !== undefined) this.reship(state, this.ports.recovered);
    const unwatch = t.onConnection?.((event) =>
      this.send({ type: "transport.connection", event, nowMs: this.ports.clock.now(), busy: this.busy() }),
    );
    if (unwatch !== undefined)
      this.subs.push({ subject: "(connection)", unsubscribe: unwatch, drain: async () => unwatch() });
  }

  /**
   * A signed receipt batch on one of our lanes: verified here (key, signature, stream, fence),
   * where the peer keys are, before it reaches the step; a bad batch goes as its error code. The
   * batches of one turn reach the machine as one `receipts` event.
   */
  private receipt(lane: string, msg: InboundMessage): void {
    const volume = this.config.volume;
    let batch;
    try {
      batch = verifyReceiptBatch(decodeMessage(receiptBatchSpec, msg.data), {
        stream: { volume, lane, subject: receiptSubject(volume, lane) },
        holderKey: (h, inc) => this.ports.peers.key(h, inc),
        currentIncarnation: (h) => this.ports.peers.incarnation(h),
        topologyEpoch: this.config.topologyEpoch,
        policyGeneration: this.config.policyGeneration,
        released: () => RangeSet.EMPTY,
      });
    } catch (err) {
      return this.arrived({ type: "receipt.invalid", lane, code: err instanceof CustodyError ? err.code : "invalid" });
    }
    const { holderId: holder, incarnation } = batch.holder;
    this.arrived({ type: "receipt", lane, holder, incarnation, receipts: batch.receipts });
  }

  /**
   * Ships again, byte for byte, the units an earlier writer process left unconfirmed, under the
   * term they were written under (re-sealing them under this term would make a holder that sees
   * them first refuse, as fenced, the same records still arriving under the old term).
   */
  private reship(state: WriterState, recovered: readonly TransportUnit[]): void {
    const derived = new Set(derivedLaneSpecs(this.config).map((d) => d.lane));
    for (const u of recovered) {
      const l = state.lanes[u.lane];
      if (l === undefined || u.volume !== this.config.volume) continue;
      try {
        // Only units that still open with our key, below where this term's own writes begin.
        (derived.has(u.lane) ? openCoalescedPayload : openPayload)(this.ports.dataKey, u, u.payload);
        if (u.term > this.config.term || u.lastSeq >= (l.spec.firstSeq ?? 1))
          throw new CustodyError("reship_out_of_history", "recovered unit is not below this term's first sequence", {
            term: u.term,
            lastSeq: u.lastSeq,
          });
        this.ship(u.lane, u, false);
        this.counters.inc("units_reshipped");
      } catch (err) {
        this.counters.inc(`reship_${err instanceof CustodyError ? err.code : "failed"}`);
      }
    }
  }

  /** Flushes the coalesced stream's open windows (a graceful stop does not wait for its cadence). */
  flushCoalesced(): void {
    this.coalescing?.flush();
  }

  /** Unsubscribes and closes the credit senders. Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const s of this.subs) s.unsubscribe();
    for (const m of this.senders.values()) for (const s of m.values()) s.close();
  }
}
