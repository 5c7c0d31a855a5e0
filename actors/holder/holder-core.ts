import { isSpanContextValid, ROOT_CONTEXT, SpanKind, trace, type Link, type Tracer } from "@opentelemetry/api";
import { unitRecordBytes } from "../../arena/segment.ts";
import { SpillSet } from "../../arena/spill-set.ts";
import { Counters } from "../../core/counters.ts";
import { CustodyError } from "../../core/custody-error.ts";
import { UnitVerdict } from "../../lanes/lane-log.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import { decodeReceiptBatch, makeReceiptBatch, signReceiptBatch } from "../../custody/receipt-batch.ts";
import { verifyReceiptBatch } from "../../custody/receipt-verification.ts";
import { CreditSender } from "../../transport/credit-sender.ts";
import type { CreditHeaders, CreditRefusal } from "../../transport/credit-grantor.ts";
import { readUnitMessage, senderOf, type InboundUnit, type UnitSubjectMessage } from "../../transport/unit-frames.ts";
import { baseSubject, fetchSubject, receiptSubject, releaseSubject, transferSubject, unitSubject } from "../../transport/subjects.ts";
import { startConsumerSpan, injectTraceContext } from "../../transport/trace-context.ts";
import type { ConnectionEvent, InboundMessage, TransportSubscription } from "../../transport/transport.ts";
import { creditSpec, decodeMessage, encodeMessage, unitSpec, WireError } from "../../transport/wire/index.ts";
import { laneKey, type HolderConfig, type ProtectedRamEvidence } from "./holder-config.ts";
import { HolderLane } from "./holder-lane.ts";
import { baseReadySpec, releaseFrontierSpec } from "./holder-messages.ts";
import { FrontierBacking } from "./frontier-backing.ts";
import { EdgeReceiptError } from "./lane-obligations.ts";
import { dueResends, forgetReceipted, noteResent, noteSent, receiverReset } from "./edge-repair.ts";
import { adoptPreserved, adoptSpillRecords, requestAdmission } from "./holder-restart.ts";
import { protectedCreditHeadroom, protectionStatus, ProtectionStatus } from "../../policies/protected-ram.ts";
import { ReceiptBatcher } from "./receipt-batcher.ts";
import { laneReceipts } from "./receipt-content.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { HolderRejectCode, type HolderInbound, type HolderObservation, type HolderPorts } from "./holder-ports.ts";

/**
 * The holder's working parts behind its XState machine: ingress with credits, immediate fan-out,
 * signed receipt batches, release, persistence flushes, transfer and protected-RAM evacuation.
 * Every entry point is called from a named machine action (the machine is the single owner of
 * inbound events); the core reaches the world only through its ports.
 */
export class HolderCore {
  readonly counters: Counters;
  readonly lanes = new Map<string, HolderLane>();
  private readonly batcher: ReceiptBatcher<Link>;
  private readonly frontiers: FrontierBacking;
  private readonly tracer: Tracer;
  private readonly subs: TransportSubscription[] = [];
  private readonly timers = new Set<unknown>();
  private receiptTimer: unknown;
  private spill: SpillSet | undefined;
  private evidence: ProtectedRamEvidence | undefined;
  private offerSeq = 0;
  private serving = true;
  private stopped = false;
  private unwatch: (() => void) | undefined;

  constructor(
    readonly config: HolderConfig,
    private readonly ports: HolderPorts,
    private readonly dispatch: (e: HolderInbound) => void,
  ) {
    this.counters = ports.counters ?? new Counters();
    this.tracer = ports.tracer ?? trace.getTracer("custody.holder");
    this.batcher = new ReceiptBatcher<Link>(config.receipts);
    this.frontiers = new FrontierBacking(ports.peers);
    this.evidence = config.protectedRam?.evidence;
    for (const l of config.lanes) this.addLane(l.volume, l.lane, l.upstream, l.downstream);
  }

  private addLane(volume: string, lane: string, upstream: readonly string[], downstream: readonly string[]): HolderLane {
    const key = laneKey(volume, lane);
    const hl = new HolderLane({ volume, lane, upstream, downstream }, this.config, this.ports.transport, this.ports.clock, this.counters);
    hl.creditCap = () => this.protectedCreditHeadroom();
    for (const edge of downstream) {
      const onReset = (e: { incarnation: number; restarted: boolean }) => {
        this.counters.inc(e.restarted ? "edge_restarted" : "edge_new_window");
        receiverReset(hl, edge, e);
      };
      hl.edges.set(
        edge,
        new CreditSender({ transport: this.ports.transport, clock: this.ports.clock, sender: this.config.holderId, holder: edge, volume, lane, session: this.config.incarnation, onReset }),
      );
    }
    this.lanes.set(key, hl);
    return hl;
  }

  private observe(o: HolderObservation): void {
    this.ports.observe?.(o);
  }

  private reject(code: string, lane?: string): void {
    this.counters.inc(code);
    this.observe(lane === undefined ? { type: "rejected", code } : { type: "rejected", lane, code });
  }

  private later(ms: number, e: HolderInbound): void {
    const id = this.ports.clock.setTimeout(() => {
      this.timers.delete(id);
      if (!this.stopped) this.dispatch(e);
    }, ms);
    this.timers.add(id);
  }

  // ---- lifecycle --------------------------------------------------------------------------------

  /** Opens the spill stream (if any), subscribes every subject and grants initial credits. */
  async start(): Promise<void> {
    if (this.config.flush) {
      if (!this.ports.files || !this.ports.spillPath) throw new CustodyError("invalid_holder_config", "a flush policy needs files and spillPath", {});
      const opened = await SpillSet.open(this.ports.files, this.ports.spillPath, this.ports.clock, this.config.flush.rotateBytes);
      this.spill = opened.set;
      // What the previous incarnation made durable is custody again, under this incarnation.
      await adoptSpillRecords(this, opened.set, opened.recovered);
      this.later(this.config.flush.intervalMs, { type: "timer.flush" });
    }
    if (this.ports.preserved !== undefined && this.protectionOk()) adoptPreserved(this, await this.ports.preserved.recovered());
    const t = this.ports.transport;
    const me = this.config.holderId;
    for (const [key, hl] of this.lanes) this.subscribeLane(key, hl);
    this.subs.push(t.subscribe(releaseSubject(me), (msg) => this.dispatch({ type: "nats.release", msg })));
    // Our edges' frontiers too: what the control log released there is owed to them no more.
    const edges = new Set<string>();
    for (const hl of this.lanes.values()) for (const e of hl.edges.keys()) edges.add(e);
    for (const e of edges) this.subs.push(t.subscribe(releaseSubject(e), (msg) => this.dispatch({ type: "nats.release", msg })));
    this.subs.push(t.subscribe(transferSubject(me), (msg) => this.dispatch({ type: "nats.transfer", msg })));
    this.subs.push(t.subscribe(fetchSubject(me), (msg) => this.dispatch({ type: "nats.fetch", msg })));
    this.subs.push(t.subscribe(baseSubject(me), (msg) => this.dispatch({ type: "nats.base", msg })));
    this.later(this.ports.receiptRefreshMs ?? 500, { type: "timer.refresh" });
    const unwatch = t.onConnection?.((event) => this.dispatch({ type: "transport.connection", event }));
    if (unwatch !== undefined) this.unwatch = unwatch;
    await t.flush();
    requestAdmission(this);
    for (const hl of this.lanes.values()) for (const s of hl.edges.values()) s.requestCredit();
    // Senders learn this incarnation (and that it holds nothing of theirs yet) from the announcement.
    for (const hl of this.lanes.values()) hl.grantor.announce();
  }

  private subscribeLane(key: string, hl: HolderLane): void {
    const t = this.ports.transport;
    // Units that arrive in one socket read reach the actor as one event (one transition, not N).
    const pending: InboundMessage[] = [];
    this.subs.push(
      t.subscribe(unitSubject(this.config.holderId, hl.volume, hl.lane), (msg) => {
        pending.push(msg);
        if (pending.length === 1) queueMicrotask(() => !this.stopped && this.dispatch({ type: "nats.units", lane: key, msgs: pending.splice(0) }));
      }, { borrow: true }), // every unit is copied into the arena; the message is dropped after admission
    );
    this.subs.push(t.subscribe(receiptSubject(hl.volume, hl.lane), (msg) => this.dispatch({ type: "nats.receipt", lane: key, msg })));
    for (const [edge, s] of hl.edges) {
      this.subs.push(t.subscribe(s.creditSubject, (msg) => this.dispatch({ type: "nats.credit", lane: key, edge, msg })));
    }
  }

  /** Stops promising credit to upstream senders (draining); everything already credited is still admitted. */
  stopGranting(): void {
    this.serving = false;
    for (const hl of this.lanes.values()) hl.grantor.close();
  }

  /** True when no lane retains anything (a draining holder may retire). */
  get empty(): boolean {
    for (const hl of this.lanes.values()) if (!hl.obligations.retained.isEmpty) return false;
    return true;
  }

  /**
   * The connection changed. After a reconnect the subscriptions are live again but whatever was
   * published meanwhile is gone: credits are re-announced and asked for, receipts re-published, and
   * every unit an edge has not receipted is due for re-sending at once.
   */
  connectionChanged(e: ConnectionEvent): void {
    this.counters.inc(`connection_${e}`);
    if (e !== "reconnected") return;
    for (const hl of this.lanes.values()) {
      hl.grantor.announce();
      hl.grantor.topUpAll();
      for (const [edge, s] of hl.edges) {
        s.requestCredit();
        hl.sendLogs.get(edge)?.reset();
        hl.resendBackoff.delete(edge);
      }
    }
    this.republishReceipts();
    this.resendDue();
  }

  /** Unsubscribes, stops timers and closes the spill stream. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unwatch?.();
    for (const s of this.subs) s.unsubscribe();
    for (const id of this.timers) this.ports.clock.clearTimeout(id);
    if (this.receiptTimer !== undefined) this.ports.clock.clearTimeout(this.receiptTimer);
    for (const hl of this.lanes.values()) for (const s of hl.edges.values()) s.close();
    await this.spill?.close();
  }

  // ---- ingress ----------------------------------------------------------------------------------

  /**
   * One message on `custody.v1.unit.<me>.<volume>.<lane>`: a unit, a frame of units, or a credit
   * request. Each unit is credited, validated (size, digest, term, overlap), stored, forwarded to
   * every edge at once and noted for the next receipt. Any refusal is typed, counted, and changes
   * no custody state; one bad unit in a frame costs the other units nothing.
   */
  handleUnit(key: string, msg: InboundMessage): void {
    const hl = this.lanes.get(key);
    if (hl === undefined) return;
    const head = senderOf(msg.headers);
    const sender = head.sender;
    if (sender === undefined || !hl.grantor.knows(sender)) return this.reject(HolderRejectCode.UnknownSender, key);
    let read: UnitSubjectMessage;
    try {
      read = readUnitMessage(msg, head.sentThrough);
    } catch (err) {
      // Unreadable: still account the sender's stated total so its credit is not leaked.
      this.account(hl, sender, 0, head, false);
      return this.reject(err instanceof WireError ? err.code : "malformed", key);
    }
    if (read.kind === "credit-request") {
      hl.forfeit(hl.grantor.onRequest(sender, head));
      hl.forfeit(hl.grantor.takeForfeited());
      return;
    }
    if (read.kind !== "units") return this.reject(HolderRejectCode.UnexpectedKind, key);
    for (const u of read.units) {
      const h = { ...head, sentThrough: u.sentThrough };
      if (u.unit === undefined) {
        this.account(hl, sender, 0, h, false);
        this.reject(u.error?.code ?? "malformed", key);
      } else this.admitUnit(key, hl, sender, u.unit, u, msg.subject, h);
    }
  }

  /** Admission of one decoded unit (see `handleUnit`). */
  private admitUnit(key: string, hl: HolderLane, sender: string, unit: TransportUnit, arrived: InboundUnit, subject: string, credits: CreditHeaders): void {
    const span = startConsumerSpan(this.tracer, "holder.admit", { subject, headers: arrived.headers });
    try {
      const bytes = unitRecordBytes(unit);
      const credit = this.account(hl, sender, bytes, credits, true);
      if (credit === "exceeded") return this.reject("credit_exceeded", key);
      // Credited by another window (a restart on either side): not ours to store; the sender
      // re-sends it under the window our reply names.
      if (credit !== "ok" && credit !== "replayed") return this.reject(credit, key);
      if (credit === "replayed") {
        // No credit backs it. A duplicate changes nothing; a late unit presumed lost is refused and
        // will be re-forwarded by the sender once our receipts show the hole.
        this.noteForReceipt(key);
        return this.reject("replayed_unit", key);
      }
      let verdict: string;
      try {
        if (unit.volume !== hl.volume || unit.lane !== hl.lane) throw new CustodyError("wrong_lane", "unit belongs to another lane", {});
        if (bytes > hl.arena.config.maxUnitBytes) {
          throw new CustodyError("unit_too_large", "unit is larger than this holder accepts", { bytes, max: hl.arena.config.maxUnitBytes });
        }
        validateTransportUnit(unit);
        verdict = hl.log.classify(unit);
      } catch (err) {
        hl.forfeit(bytes);
        span.setAttribute("custody.rejected", (err as CustodyError).code ?? "error");
        return this.reject(err instanceof CustodyError ? err.code : "invalid_unit", key);
      }
      if (verdict === UnitVerdict.duplicate) {
        hl.forfeit(bytes);
        this.counters.inc("duplicate_unit");
        // The sender may have lost our receipt: re-announce soon.
        this.noteForReceipt(key);
        return;
      }
      let opened: boolean;
      try {
        opened = hl.store(unit);
      } catch (err) {
        // The arena refuses before changing anything; the sender still holds the unit unreceipted.
        hl.forfeit(bytes);
        return this.reject(err instanceof CustodyError ? err.code : "arena_refused", key);
      }
      if (opened) this.later(this.config.arena.maxOpenDelayMs, { type: "timer.seal", lane: key });
      if (this.ports.preserved !== undefined) this.ports.preserved.keep(unit);
      if (span.isRecording()) {
        span.setAttributes({ "custody.volume": hl.volume, "custody.lane": hl.lane, "custody.first_seq": unit.firstSeq, "custody.last_seq": unit.lastSeq });
      }
      if (this.ports.observe) this.observe({ type: "admitted", lane: key, first: unit.firstSeq, last: unit.lastSeq });
      const context = span.spanContext();
      this.forward(hl, unit, arrived.data, bytes, context);
      // Without a recording tracer there is nothing to link a receipt to.
      this.noteForReceipt(key, isSpanContextValid(context) ? { context } : undefined);
      if (this.serving) hl.grantor.topUp(sender);
    } finally {
      span.end();
    }
  }

  /** Credit accounting of one arrival (nothing changes when it is exceeded). */
  private account(hl: HolderLane, sender: string, bytes: number, credits: CreditHeaders, storing: boolean): "ok" | "exceeded" | "replayed" | CreditRefusal {
    try {
      const r = hl.grantor.onArrival(sender, bytes, credits);
      hl.forfeit(hl.grantor.takeForfeited());
      if (r.kind === "replayed") return "replayed";
      if (r.kind === "refused") return r.code;
      // Credit used by units lost on the wire is forfeited now; the stored unit's own bytes are
      // consumed by the arena append (or forfeited by the caller if the unit is refused).
      hl.forfeit(r.consumed - (storing ? bytes : 0));
      return "ok";
    } catch {
      return "exceeded";
    }
  }

  /** Fan-out: the unit goes to every edge at once, each within that edge's own credits. */
  private forward(hl: HolderLane, unit: TransportUnit, data: Uint8Array, bytes: number, parent: import("@opentelemetry/api").SpanContext): void {
    if (hl.edges.size === 0) return;
    const now = this.ports.clock.now();
    for (const edge of hl.edges.keys()) noteSent(hl, edge, unit.firstSeq, unit.lastSeq, now);
    if (!isSpanContextValid(parent)) {
      // Nothing records spans: no forward span and no trace context to carry.
      for (const s of hl.edges.values()) s.send({ data, bytes });
      return;
    }
    const ctx = trace.setSpanContext(ROOT_CONTEXT, parent);
    for (const [edge, s] of hl.edges) {
      const span = this.tracer.startSpan("holder.forward", { kind: SpanKind.PRODUCER, attributes: { "custody.edge": edge } }, ctx);
      const headers = injectTraceContext({}, trace.setSpan(ROOT_CONTEXT, span));
      s.send({ data, bytes, headers, onSent: () => span.end() });
    }
  }

  /** Applies a grant from a downstream edge and sends what now fits. */
  handleCredit(key: string, edge: string, msg: InboundMessage): void {
    const s = this.lanes.get(key)?.edges.get(edge);
    if (s === undefined) return;
    try {
      s.onGrant(decodeMessage(creditSpec, msg.data));
    } catch (err) {
      this.reject(err instanceof CustodyError ? err.code : "malformed", key);
    }
  }

  // ---- gap repair -------------------------------------------------------------------------------

  /**
   * Re-sends to each edge, in order and within its credits, the retained units it has not
   * receipted a while after their last send (or at all, after it restarted). RAM-resident units go
   * at once; units whose segment was spilled are read back from the spill stream first.
   */
  resendDue(): void {
    const now = this.ports.clock.now();
    for (const [key, hl] of this.lanes) {
      for (const d of dueResends(hl, now, this.config.resendAfterMs)) {
        let sent = RangeSet.EMPTY;
        for (const u of hl.ramUnits(d.seqs)) {
          d.sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
          noteSent(hl, d.edge, u.firstSeq, u.lastSeq, now);
          sent = sent.add(u.firstSeq, u.lastSeq);
        }
        if (!sent.isEmpty) this.counters.inc("retransmit", sent.count);
        noteResent(hl, d.edge);
        const onDisk = d.seqs.subtract(sent);
        if (!onDisk.isEmpty) this.resendFromDisk(key, hl, d.edge, onDisk);
      }
    }
  }

  /** Reads spilled units of `seqs` back and hands them to the actor as `resend.loaded`. */
  private resendFromDisk(key: string, hl: HolderLane, edge: string, seqs: RangeSet): void {
    const spill = this.spill;
    if (spill === undefined) return void this.counters.inc("retransmit_unavailable", seqs.count);
    // Mark them sent now, so the next refresh does not read the same records again meanwhile.
    noteSent(hl, edge, seqs.min!, seqs.max!, this.ports.clock.now());
    void hl.diskUnits(spill, seqs).then(
      (units) => this.send({ type: "resend.loaded", lane: key, edge, units }),
      () => this.counters.inc("retransmit_unreadable"),
    );
  }

  /** Units read back from disk for an edge: sent in order within its credits. */
  resendLoaded(key: string, edge: string, units: readonly TransportUnit[]): void {
    const hl = this.lanes.get(key);
    const sender = hl?.edges.get(edge);
    if (hl === undefined || sender === undefined) return;
    const now = this.ports.clock.now();
    const pending = hl.obligations.pendingFor(edge);
    for (const u of units) {
      if (!pending.covers(u.firstSeq, u.lastSeq)) continue; // receipted or released meanwhile
      sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
      noteSent(hl, edge, u.firstSeq, u.lastSeq, now);
      this.counters.inc("retransmit");
    }
  }

  // ---- receipts ---------------------------------------------------------------------------------

  private noteForReceipt(key: string, link?: Link): void {
    const full = this.batcher.noteAdmitted(key, this.ports.clock.now(), link);
    if (full) {
      this.publishReceipt(key);
      return;
    }
    if (this.receiptTimer === undefined) {
      const id = this.ports.clock.setTimeout(() => {
        this.receiptTimer = undefined;
        if (!this.stopped) this.dispatch({ type: "timer.receipts" });
      }, this.config.receipts.maxDelayMs);
      this.receiptTimer = id;
    }
  }

  /** Publishes every batch that is full or past its maximum delay; re-arms the timer for the rest. */
  flushDueReceipts(): void {
    const now = this.ports.clock.now();
    for (const key of this.batcher.due(now)) this.publishReceipt(key);
    const next = this.batcher.nextDeadline();
    if (next !== undefined && this.receiptTimer === undefined) {
      this.receiptTimer = this.ports.clock.setTimeout(() => {
        this.receiptTimer = undefined;
        if (!this.stopped) this.dispatch({ type: "timer.receipts" });
      }, Math.max(0, next - now));
    }
  }

  /** Re-announces retained coverage on every lane (repairs receipts lost on the wire). */
  refreshReceipts(): void {
    this.republishReceipts();
    this.later(this.ports.receiptRefreshMs ?? 500, { type: "timer.refresh" });
  }

  private republishReceipts(): void {
    // Until the control log admits this incarnation, its receipts count for nothing: keep asking.
    requestAdmission(this);
    for (const [key, hl] of this.lanes) {
      if (hl.obligations.retained.isEmpty) continue;
      this.publishReceipt(key);
      this.tryRelease(key, hl); // retries a release a deferred seal held back
    }
  }

  /** Protection status of the RAM queue now (`none` without protected-RAM configuration). */
  protectionState(): string {
    const p = this.config.protectedRam;
    if (!p || !this.evidence || !this.config.residency.includes("protected_ram")) return "none";
    let queued = 0;
    for (const hl of this.lanes.values()) queued += hl.ramStoredBytes();
    return protectionStatus(this.evidence, queued, this.ports.clock.now(), p);
  }

  /**
   * Credit bytes any lane may still promise so that RAM queued plus promised stays within the
   * protected-RAM bound (policies/protected-ram.ts); unlimited without usable protected evidence.
   */
  private protectedCreditHeadroom(): number {
    const p = this.config.protectedRam;
    if (!p || !this.evidence || !this.config.residency.includes("protected_ram")) return Infinity;
    let queued = 0;
    for (const hl of this.lanes.values()) queued += hl.ramStoredBytes() + hl.arena.outstanding(hl.volume, hl.lane);
    return protectedCreditHeadroom(this.evidence, queued, this.ports.clock.now(), p);
  }

  /** True while protected-RAM receipts may be issued for what is queued in RAM now. */
  protectionOk(): boolean {
    return this.protectionState() === ProtectionStatus.Ok;
  }

  /**
   * Signs and publishes the lane's receipt batch (contents: `laneReceipts`), with a span linked to
   * the admit spans of the units it covers.
   */
  publishReceipt(key: string): void {
    const hl = this.lanes.get(key);
    if (hl === undefined) return;
    const taken = this.batcher.take(key);
    const now = this.ports.clock.now();
    const receipts = laneReceipts(hl, this.config, now, this.protectionOk() ? this.evidence : undefined);
    if (receipts.length === 0) return;
    const span = this.tracer.startSpan("holder.receipt", { kind: SpanKind.PRODUCER, links: taken?.links ?? [], attributes: { "custody.lane": key, "custody.units": taken?.units ?? 0 } });
    try {
      const subject = receiptSubject(hl.volume, hl.lane);
      const holder = { holderId: this.config.holderId, incarnation: this.config.incarnation };
      const batch = makeReceiptBatch({ volume: hl.volume, lane: hl.lane, subject }, holder, now, receipts);
      const signed = signReceiptBatch(batch, this.ports.privateKey);
      this.ports.transport.publish(subject, encodeMessage(receiptBatchSpec, { body: signed.body, signature: signed.signature }), {
        headers: injectTraceContext({}, trace.setSpan(ROOT_CONTEXT, span)),
      });
      for (const r of receipts) this.observe({ type: "receipt_published", lane: key, residency: r.residency.kind, retained: r.retained.toString() });
    } finally {
      span.end();
    }
  }

  /**
   * A receipt batch on one of our lanes. Our own are ignored; an edge's verified receipt drops
   * that edge's pins; the transfer neighbor's verified receipt completes a transfer. A batch that
   * fails verification (forged, stale incarnation/epoch, wrong stream) is counted and changes nothing.
   */
  handleReceipt(key: string, msg: InboundMessage): void {
    const hl = this.lanes.get(key);
    if (hl === undefined) return;
    let holderId: string;
    let signed: { body: Uint8Array; signature: Uint8Array };
    try {
      signed = decodeMessage(receiptBatchSpec, msg.data);
      holderId = decodeReceiptBatch(signed.body).holder.holderId;
    } catch (err) {
      return this.reject(err instanceof CustodyError ? `receipt_${err.code}` : "receipt_malformed", key);
    }
    if (holderId === this.config.holderId) return;
    const isEdge = hl.edges.has(holderId);
    const isNeighbor = holderId === this.config.transferNeighbor;
    if (!isEdge && !isNeighbor) return;
    const span = startConsumerSpan(this.tracer, "holder.edge_receipt", msg);
    try {
      const batch = verifyReceiptBatch(signed, {
        stream: { volume: hl.volume, lane: hl.lane, subject: receiptSubject(hl.volume, hl.lane) },
        holderKey: (h, inc) => this.ports.peers.key(h, inc),
        currentIncarnation: (h) => this.ports.peers.incarnation(h),
        topologyEpoch: this.config.epoch,
        policyGeneration: this.config.policyGeneration,
        released: () => RangeSet.EMPTY,
      });
      let stated = RangeSet.EMPTY;
      for (const r of batch.receipts) stated = stated.union(r.retained);
      if (isEdge) {
        const before = hl.obligations.receiptedBy(holderId);
        for (const r of batch.receipts) {
          const restarted = hl.obligations.applyEdgeReceipt({ holder: holderId, incarnation: batch.holder.incarnation, epoch: r.topologyEpoch, receiptSeq: r.receiptSeq, retained: r.retained });
          if (restarted) hl.sendLogs.get(holderId)?.reset();
        }
        forgetReceipted(hl, holderId, !before.coversAll(hl.obligations.receiptedBy(holderId)));
        this.observe({ type: "edge_receipt", lane: key, from: holderId, retained: stated.toString() });
      }
      if (isNeighbor) {
        this.observe({ type: "neighbor_receipt", lane: key, from: holderId, retained: stated.toString() });
        if (!hl.inTransfer.isEmpty) this.completeTransfer(key, hl, holderId, stated);
      }
      this.tryRelease(key, hl);
    } catch (err) {
      const code = err instanceof CustodyError ? err.code : "receipt_invalid";
      span.setAttribute("custody.rejected", code);
      this.counters.inc(`receipt_${code}`);
      this.observe({ type: "receipt_refused", lane: key, from: holderId, code });
      if (!(err instanceof CustodyError || err instanceof EdgeReceiptError)) throw err;
    } finally {
      span.end();
    }
  }

  /**
   * The base builder beside us announces a base snapshot: from now on our receipts of that lane
   * name it (newest wins; an older announcement changes nothing). Refused (counted) for a lane we
   * do not serve.
   */
  handleBase(msg: InboundMessage): void {
    let b;
    try {
      b = decodeMessage(baseReadySpec, msg.data);
    } catch (err) {
      return this.reject(err instanceof CustodyError ? err.code : "malformed");
    }
    if (b.holder !== this.config.holderId) return this.reject("wrong_holder");
    const key = laneKey(b.volume, b.lane);
    const hl = this.lanes.get(key);
    if (hl === undefined) return this.reject("unknown_lane");
    if (hl.base !== undefined && hl.base.throughSeq >= b.throughSeq) return;
    hl.base = { snapshotId: b.snapshotId, throughSeq: b.throughSeq, bytes: b.bytes };
    this.counters.inc("base_announced");
    this.publishReceiptNow(key);
  }

  // ---- release ----------------------------------------------------------------------------------

  /**
   * A release frontier from the control log. Ours authorizes ranges, then releases whole segments;
   * an edge's ends what we owe that edge there (a unit it released before its receipt reached us
   * would otherwise stay pinned for it forever). When our peer directory follows the log, a
   * frontier counts only as far as the log backs it: beyond what we have folded we catch up first
   * (`releaseChecked`), and what the log still does not hold is refused as `release_unverified`.
   */
  handleRelease(msg: InboundMessage): void {
    let f;
    try {
      f = decodeMessage(releaseFrontierSpec, msg.data);
    } catch (err) {
      return this.reject(err instanceof CustodyError ? err.code : "malformed");
    }
    const key = laneKey(f.volume, f.lane);
    const hl = this.lanes.get(key);
    if (f.holder !== this.config.holderId && !hl?.edges.has(f.holder)) return this.reject("wrong_holder");
    if (f.epoch < this.config.epoch) return this.reject("stale_epoch");
    if (hl === undefined) return this.reject("unknown_lane");
    const ranges = RangeSet.fromJSON(f.ranges);
    const holder = f.holder;
    if (this.frontiers.backedNow(hl.volume, hl.lane, holder, ranges)) return this.applyFrontier(key, hl, holder, ranges);
    this.frontiers.catchUp(() => this.send({ type: "release.checked", lane: key, holder, ranges }));
  }

  /** A frontier the log did not back yet, after catching up with it: only what the log now holds counts. */
  releaseChecked(key: string, holder: string, ranges: RangeSet): void {
    const hl = this.lanes.get(key);
    if (hl === undefined) return;
    const b = this.frontiers.backed(hl.volume, hl.lane, holder, ranges);
    if (b.unverified) this.reject("release_unverified", key);
    if (!b.ranges.isEmpty) this.applyFrontier(key, hl, holder, b.ranges);
  }

  private applyFrontier(key: string, hl: HolderLane, holder: string, ranges: RangeSet): void {
    if (holder === this.config.holderId) hl.obligations.authorizeRelease(ranges);
    else if (hl.obligations.releasedAtEdge(holder, ranges)) forgetReceipted(hl, holder, true);
    else return;
    this.tryRelease(key, hl);
  }

  /** Releases what obligations allow. Pending receipts go out first: a unit is always receipted before it is forgotten. */
  tryRelease(key: string, hl: HolderLane): void {
    if (hl.obligations.releasable().isEmpty) {
      hl.unpinForwarded();
      return;
    }
    if (this.batcher.take(key) !== undefined) this.publishReceiptNow(key);
    const span = this.tracer.startSpan("holder.release", { attributes: { "custody.lane": key } });
    let released = RangeSet.EMPTY;
    // Two passes: releasing sealed segments can free the room a deferred seal of the open segment
    // was waiting for (the arena defers a seal that would strand space promised to credits).
    for (let pass = 0; pass < 2; pass++) {
      const releasable = hl.obligations.releasable();
      const open = hl.arena.openSegmentOf(hl.volume, hl.lane);
      // A quiet lane's open segment would otherwise wait for its seal timer.
      if (open !== undefined && releasable.coversAll(hl.arena.describe(open).seqs())) hl.seal();
      released = released.union(hl.releaseAllowed());
      if (open === undefined || hl.arena.openSegmentOf(hl.volume, hl.lane) !== open) break;
    }
    this.dropSpilled(hl);
    span.setAttribute("custody.released", released.toString());
    span.end();
    if (!released.isEmpty) {
      this.ports.preserved?.forget(hl.volume, hl.lane, released);
      this.observe({ type: "released", lane: key, seqs: released.toString() });
      if (this.serving) hl.grantor.topUpAll();
    }
  }

  /** Disk records of segments that just stopped being custody (released or transferred) go from the spill set. */
  dropSpilled(hl: HolderLane): void {
    for (const ev of hl.takeDroppedSpill()) void this.spill?.release(ev).catch(() => this.counters.inc("spill_release_failed"));
  }

  private publishReceiptNow(key: string): void {
    this.batcher.noteAdmitted(key, this.ports.clock.now());
    this.publishReceipt(key);
  }

  /**
   * Max open delay of a lane's segment passed: seal it, so it can be released, spilled or
   * transferred whole. A holder that neither spills nor transfers seals it only once it is at least
   * half full (or the arena is under pressure): sealing a trickle's segments every few units would
   * strand most of the arena in nearly empty segments. A release that covers the whole open
   * segment seals it anyway (`tryRelease`).
   */
  sealDue(key: string): void {
    const hl = this.lanes.get(key);
    if (hl === undefined) return;
    if (this.config.flush !== undefined || this.config.transferNeighbor !== undefined || hl.fillRatio() > this.config.pressureRatio || hl.openFill() >= 0.5) hl.seal();
    this.tryRelease(key, hl);
  }

  // ---- shared with holder-custody-moves.ts (persistence, transfer, protected RAM) ---------------

  /** The ports (for the custody-moves module). */
  get io(): HolderPorts {
    return this.ports;
  }

  /** The open spill stream, when a flush policy is configured. */
  get spillStream(): SpillSet | undefined {
    return this.spill;
  }

  /** The tracer spans go to. */
  get spans(): Tracer {
    return this.tracer;
  }

  /** True while granting credits (serving or degraded); false once draining. */
  get granting(): boolean {
    return this.serving;
  }

  /** Current protected-RAM evidence, if configured. */
  get protectedEvidence(): ProtectedRamEvidence | undefined {
    return this.evidence;
  }

  /** Replaces the protected-RAM evidence (from the host's monitoring). */
  setEvidence(e: ProtectedRamEvidence): void {
    this.evidence = e;
    this.observe({ type: "evidence", status: this.protectionState() });
  }

  /** Records an observation (custody-moves module). */
  note(o: HolderObservation): void {
    this.observe(o);
  }

  /** Schedules an event back to the owning actor after `ms` on the clock. */
  schedule(ms: number, e: HolderInbound): void {
    this.later(ms, e);
  }

  /** Asks the owning actor to handle `e` (async completions). */
  send(e: HolderInbound): void {
    if (!this.stopped) this.dispatch(e);
  }

  /** Lane runtime for `key`, created (custody-only: no upstream, no edges) and subscribed when absent. */
  laneFor(volume: string, lane: string): HolderLane {
    const key = laneKey(volume, lane);
    let hl = this.lanes.get(key);
    if (hl === undefined) {
      hl = this.addLane(volume, lane, [], []);
      this.subscribeLane(key, hl);
    }
    return hl;
  }

  /** Publishes a receipt for `key` at once (after a transfer admission or a flush). */
  receiptNow(key: string): void {
    this.publishReceiptNow(key);
  }

  /** Next transfer offer id. */
  nextOfferId(): number {
    return ++this.offerSeq;
  }

  /** @internal */
  completeTransfer(key: string, hl: HolderLane, from: string, stated: RangeSet): void {
    const seqs = hl.inTransfer.intersect(stated);
    if (seqs.isEmpty) return;
    const span = this.tracer.startSpan("holder.transfer_complete", { attributes: { "custody.lane": key, "custody.to": from } });
    if (hl.transferredOut(seqs, stated)) {
      this.dropSpilled(hl);
      this.observe({ type: "transferred_out", lane: key, to: from, seqs: seqs.toString() });
      if (this.serving) hl.grantor.topUpAll();
    }
    span.end();
  }
}
