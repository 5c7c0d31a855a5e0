import { trace, type Link, type Tracer } from "@opentelemetry/api";
import { SpillSet } from "../../arena/index.ts";
import { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { CreditSender } from "../hop/index.ts";
import {
  auditSubject,
  baseSubject,
  fetchesToHolder,
  receiptSubject,
  releaseSubject,
  transferSubject,
  unitSubject,
  type WireCredit,
} from "../../transport/protocol/index.ts";
import type { InboundMessage, TransportSubscription } from "../../transport/index.ts";
import { laneKey, type HolderConfig, type ProtectedRamEvidence } from "./holder-config.ts";
import { edgeGrantChecks } from "../hop/index.ts";
import { HolderLane, type SpawnLaneArena } from "./holder-lane.ts";
import { FrontierBacking } from "../hop/index.ts";
import { forgetReceipted, receiverReset } from "../hop/index.ts";
import { adoptPreserved, adoptSpillRecords, requestAdmission } from "./holder-restart.ts";
import { ProtectionStatus } from "../../policies/index.ts";
import { publishLaneReceipt, ReceiptDesk } from "./holder-receipt-publisher.ts";
import type { HolderInbound, HolderObservation, HolderPorts, HolderTimer, LoadedUnit } from "./holder-ports.ts";
import type { HolderContext } from "./holder-context.ts";
import { resendDue, resendLoaded } from "./holder-resend.ts";
import { applyLaneReceipt, ignoresLaneReceipt } from "./holder-edge-receipts.ts";
import { handleUnitMessage, type IngressActions } from "./holder-ingress.ts";
import { ramCreditHeadroom, ramProtectionState } from "./holder-protection.ts";
import {
  DEFAULT_RECEIPT_REFRESH_MS,
  type BaseSnapshotRef,
  type HolderPlainState,
  type ReceiptLink,
} from "./holder-state.ts";

/**
 * The holder's working parts behind its XState machine: ingress with credits, immediate fan-out,
 * signed receipt batches, release, persistence flushes, transfer and protected-RAM evacuation.
 * Every entry point is called from a named machine action (the machine is the single owner of
 * inbound events); the core reaches the world only through its ports.
 */
export class HolderCore {
  readonly counters: Counters;
  readonly lanes = new Map<string, HolderLane>();
  /**
   * The machine's receipt batches while an event is handled (opened and closed by the executor):
   * noted per admitted unit, signed and published when full, due or asked for.
   */
  readonly receipts: ReceiptDesk;
  private readonly frontiers: FrontierBacking;
  private readonly tracer: Tracer;
  private readonly subs: TransportSubscription[] = [];
  private spill: SpillSet | undefined;
  private stopped = false;
  private unwatch: (() => void) | undefined;
  /** What the holder's parts in other files see of it (holder-context.ts). */
  private readonly context: HolderContext;
  /** What ingress may do besides the context: note a receipt, arm a seal timer, ask if granting. */
  private readonly ingressActions: IngressActions = {
    noteForReceipt: (key, link) => this.noteForReceipt(key, link),
    later: (ms, e) => this.later(ms, e),
    granting: () => this.granting,
  };

  constructor(
    readonly config: HolderConfig,
    readonly ports: HolderPorts,
    private readonly dispatch: (e: HolderInbound) => void,
    spawnArena: SpawnLaneArena,
    /**
     * The machine's state as the executor last saw it: its protected-RAM evidence and whether it
     * grants credit are read there (their only copy; both change only by machine events).
     */
    private readonly machine: () => Pick<HolderPlainState, "evidence" | "granting" | "evacuating">,
  ) {
    this.counters = ports.counters ?? new Counters();
    this.tracer = ports.tracer ?? trace.getTracer("custody.holder");
    this.frontiers = new FrontierBacking(ports.peers);
    for (const l of config.lanes) this.addLane(l.volume, l.lane, l.upstream, l.downstream, spawnArena);
    this.context = {
      config,
      ports,
      counters: this.counters,
      tracer: this.tracer,
      lanes: this.lanes,
      spill: () => this.spill,
      reject: (code, lane) => this.reject(code, lane),
      observe: (o) => this.observe(o),
      send: (e) => this.send(e),
      later: (ms, e) => this.later(ms, e),
    };
    this.receipts = new ReceiptDesk(this.context, () => this.receiptEvidence());
  }

  private addLane(
    volume: string,
    lane: string,
    upstream: readonly string[],
    downstream: readonly string[],
    spawn: SpawnLaneArena,
  ): HolderLane {
    const key = laneKey(volume, lane);
    const hl = new HolderLane(
      { volume, lane, upstream, downstream },
      this.config,
      this.ports.transport,
      this.ports.clock,
      this.counters,
      spawn,
    );
    hl.creditCap = () => ramCreditHeadroom(this.config, this.machine().evidence, this.lanes, this.ports.clock.now());
    for (const edge of downstream) {
      const onReset = (e: { incarnation: number; restarted: boolean }) => {
        this.counters.inc(e.restarted ? "edge_restarted" : "edge_new_window");
        receiverReset(hl, edge, e);
      };
      hl.edges.set(
        edge,
        new CreditSender({
          transport: this.ports.transport,
          clock: this.ports.clock,
          sender: this.config.holderId,
          holder: edge,
          volume,
          lane,
          session: this.config.incarnation,
          onReset,
          ...edgeGrantChecks(this.ports.peers, this.counters, edge),
        }),
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

  /** Asks the holder machine to raise `e` to itself after `ms` (its `armTimer` action). */
  private later(ms: number, e: HolderTimer): void {
    if (!this.stopped) this.dispatch({ type: "timer.arm", ms, event: e });
  }

  // ---- lifecycle --------------------------------------------------------------------------------

  /** Opens the spill stream (if any), subscribes every subject and grants initial credits. */
  async start(): Promise<void> {
    if (this.config.flush) {
      if (!this.ports.files || !this.ports.spillPath)
        throw new CustodyError("invalid_holder_config", "a flush policy needs files and spillPath", {});
      const opened = await SpillSet.open(
        this.ports.files,
        this.ports.spillPath,
        this.ports.clock,
        this.config.flush.rotateBytes,
      );
      this.spill = opened.set;
      // What the previous incarnation made durable is custody again, under this incarnation.
      await adoptSpillRecords(this.context, opened.set, opened.recovered);
      // The first flush tick; the machine re-arms it from its step (holder-step.ts `flushTick`).
      this.later(this.config.flush.intervalMs, { type: "timer.flush" });
    }
    if (this.ports.preserved !== undefined && this.protectionOk())
      adoptPreserved(this.context, await this.ports.preserved.recovered());
    const t = this.ports.transport;
    const me = this.config.holderId;
    for (const [key, hl] of this.lanes) this.subscribeLane(key, hl);
    this.subs.push(t.subscribe(releaseSubject(me), (msg) => this.dispatch({ type: "nats.release", msg })));
    // Our edges' frontiers too: what the control log released there is owed to them no more.
    const edges = new Set<string>();
    for (const hl of this.lanes.values()) for (const e of hl.edges.keys()) edges.add(e);
    for (const e of edges)
      this.subs.push(t.subscribe(releaseSubject(e), (msg) => this.dispatch({ type: "nats.release", msg })));
    this.subs.push(t.subscribe(transferSubject(me), (msg) => this.dispatch({ type: "nats.transfer", msg })));
    this.subs.push(t.subscribe(fetchesToHolder(me), (msg) => this.dispatch({ type: "nats.fetch", msg })));
    this.subs.push(t.subscribe(auditSubject(me), (msg) => this.dispatch({ type: "nats.audit", msg })));
    this.subs.push(t.subscribe(baseSubject(me), (msg) => this.dispatch({ type: "nats.base", msg })));
    // The first refresh; the machine re-arms it from its step (holder-step.ts `refresh`).
    this.later(this.ports.receiptRefreshMs ?? DEFAULT_RECEIPT_REFRESH_MS, { type: "timer.refresh" });
    this.unwatch = t.onConnection?.((event) => this.dispatch({ type: "transport.connection", event }));
    await t.flush();
    requestAdmission(this.context);
    for (const hl of this.lanes.values()) for (const s of hl.edges.values()) s.requestCredit();
    // Senders learn this incarnation (and that it holds nothing of theirs yet) from the announcement.
    for (const hl of this.lanes.values()) hl.grantor.announce();
  }

  private subscribeLane(key: string, hl: HolderLane): void {
    const t = this.ports.transport;
    // Units that arrive in one socket read reach the actor as one event (one transition, not N).
    const pending: InboundMessage[] = [];
    this.subs.push(
      t.subscribe(
        unitSubject(this.config.holderId, hl.volume, hl.lane),
        (msg) => {
          pending.push(msg);
          if (pending.length === 1)
            queueMicrotask(
              () => !this.stopped && this.dispatch({ type: "nats.units", lane: key, msgs: pending.splice(0) }),
            );
        },
        { borrow: true },
      ), // every unit is copied into the arena; the message is dropped after admission
    );
    this.subs.push(
      t.subscribe(receiptSubject(hl.volume, hl.lane), (msg) => {
        if (!ignoresLaneReceipt(this.context, key, msg.data)) this.dispatch({ type: "nats.receipt", lane: key, msg });
      }),
    );
    for (const [edge, s] of hl.edges) {
      this.subs.push(
        t.subscribe(s.creditSubject, (msg) => this.dispatch({ type: "nats.credit", lane: key, edge, msg })),
      );
    }
  }

  /** Draining: every lane's grantor closes to new promises; what is already credited is still admitted. */
  closeGrants(): void {
    for (const hl of this.lanes.values()) hl.grantor.close();
  }

  /** True when no lane retains anything (a draining holder may retire). */
  get empty(): boolean {
    for (const hl of this.lanes.values()) if (!hl.obligations.retained.isEmpty) return false;
    return true;
  }

  /**
   * The connection is back (the machine's `reconnected` effect): the subscriptions are live again but whatever was
   * published meanwhile is gone: credits are re-announced and asked for, receipts re-published, and
   * every unit an edge has not receipted is due for re-sending at once.
   */
  reconnected(): void {
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

  /**
   * Unsubscribes and stops timers, then closes the spill stream unless `keepSpill` (a fenced holder reads it to hand
   * over first). Idempotent.
   */
  async stop(keepSpill = false): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.unwatch?.();
      for (const s of this.subs) s.unsubscribe();
      for (const hl of this.lanes.values()) for (const s of hl.edges.values()) s.close();
    }
    const spill = keepSpill ? undefined : this.spill;
    if (!keepSpill) this.spill = undefined;
    await spill?.close();
  }

  // ---- ingress ----------------------------------------------------------------------------------

  /** One message on a unit subject of ours (see holder-ingress.ts). */
  handleUnit(key: string, msg: InboundMessage): void {
    handleUnitMessage(this.context, this.ingressActions, key, msg);
  }

  /** Applies a grant the machine read from a downstream edge (holder-step.ts `readGrant`) and sends what now fits. */
  applyGrant(key: string, edge: string, grant: WireCredit): void {
    const s = this.lanes.get(key)?.edges.get(edge);
    if (s === undefined) return;
    try {
      s.onGrant(grant);
    } catch (err) {
      this.reject(err instanceof CustodyError ? err.code : "malformed", key);
    }
  }

  /** Re-sends to each edge what it has not receipted a while after the last send (see `resendDue`). */
  resendDue(): void {
    resendDue(this.context);
  }

  /** Units read back from disk for an edge: sent in order within its credits. */
  resendLoaded(key: string, edge: string, units: readonly LoadedUnit[]): void {
    resendLoaded(this.context, key, edge, units);
  }

  // ---- receipts ---------------------------------------------------------------------------------

  private noteForReceipt(key: string, link?: Link): void {
    this.receipts.noteAdmitted(key, link);
  }

  /** The protected-RAM evidence receipts may state now (undefined: none usable). */
  private receiptEvidence(): ProtectedRamEvidence | undefined {
    return this.protectionOk() ? this.machine().evidence : undefined;
  }

  /**
   * Signs and publishes a receipt batch the machine closed (`timer.receipts`, a base announcement),
   * naming the lane's base snapshot `base`.
   */
  publishReceiptBatch(
    key: string,
    covered: { readonly units: number; readonly links: readonly ReceiptLink[] },
    base: BaseSnapshotRef | undefined,
  ): void {
    publishLaneReceipt(this.context, key, covered, this.receiptEvidence(), base);
  }

  /**
   * Re-announces retained coverage on every lane (repairs receipts lost on the wire), and asks for
   * admission until the control log admitted this incarnation.
   */
  republishReceipts(): void {
    // Until the control log admits this incarnation, its receipts count for nothing: keep asking.
    requestAdmission(this.context);
    for (const [key, hl] of this.lanes) {
      if (hl.obligations.retained.isEmpty) continue;
      this.publishReceipt(key);
      this.tryRelease(key, hl); // retries a release a deferred seal held back
    }
  }

  /** Protection status of the RAM queue now (`none` without protected-RAM configuration). */
  protectionState(): string {
    return ramProtectionState(this.config, this.machine().evidence, this.lanes, this.ports.clock.now());
  }

  /** Unit bytes queued in RAM over every lane (what protected-RAM evidence must cover). */
  ramQueuedBytes(): number {
    let queued = 0;
    for (const hl of this.lanes.values()) queued += hl.ramStoredBytes();
    return queued;
  }

  /** True while protected-RAM receipts may be issued for what is queued in RAM now. */
  protectionOk(): boolean {
    return this.protectionState() === ProtectionStatus.Ok;
  }

  /** Signs and publishes the lane's receipt batch (see holder-receipt-publisher.ts). */
  publishReceipt(key: string): void {
    this.receipts.publish(key);
  }

  /** An edge's or the transfer neighbor's receipt batch on one of our lanes (see holder-edge-receipts.ts). */
  applyLaneReceipt(
    key: string,
    from: string,
    signed: { readonly body: Uint8Array; readonly signature: Uint8Array },
    msg: InboundMessage,
  ): void {
    applyLaneReceipt(this.context, this, key, from, signed, msg);
  }

  // ---- release ----------------------------------------------------------------------------------

  /**
   * A release frontier that passed the machine's checks (holder-step.ts `readReleaseFrontier`): ours
   * authorizes ranges, then releases whole segments; an edge's ends what we owe that edge there (a
   * unit it released before its receipt reached us would otherwise stay pinned for it forever). When
   * our peer directory follows the log, it counts only as far as the log backs it: beyond what we
   * have folded we catch up first (`releaseChecked`).
   */
  applyReleaseFrontier(key: string, holder: string, ranges: RangeSet): void {
    const hl = this.lanes.get(key);
    if (hl === undefined) return;
    if (this.frontiers.backedNow(hl.volume, hl.lane, holder, ranges)) this.applyFrontier(key, hl, holder, ranges);
    else this.frontiers.catchUp(() => this.send({ type: "release.checked", lane: key, holder, ranges }));
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

  /**
   * Releases what obligations allow. Pending receipts go out first: a unit is always receipted before it is forgotten.
   */
  tryRelease(key: string, hl: HolderLane): void {
    if (hl.obligations.releasable().isEmpty) {
      hl.unpinForwarded();
      return;
    }
    if (this.receipts.takePending(key)) this.publishReceiptNow(key);
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
      if (this.granting) hl.grantor.topUpAll();
    }
  }

  /** Disk records of segments that just stopped being custody (released or transferred) go from the spill set. */
  dropSpilled(hl: HolderLane): void {
    for (const ev of hl.takeDroppedSpill())
      void this.spill?.release(ev).catch(() => this.counters.inc("spill_release_failed"));
  }

  private publishReceiptNow(key: string): void {
    this.receipts.publishNow(key);
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
    if (
      this.config.flush !== undefined ||
      this.config.transferNeighbor !== undefined ||
      hl.fillRatio() > this.config.pressureRatio ||
      hl.openFill() >= 0.5
    )
      hl.seal();
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
    return this.machine().granting;
  }

  /** True while an evacuation is under way (machine state: from degraded evidence to the hold-up time's end). */
  get evacuating(): boolean {
    return this.machine().evacuating;
  }

  /** Current protected-RAM evidence, if configured. */
  get protectedEvidence(): ProtectedRamEvidence | undefined {
    return this.machine().evidence;
  }

  /** Records the protection status the machine's new evidence gives the RAM queued now. */
  evidenceChanged(): void {
    this.observe({ type: "evidence", status: this.protectionState() });
  }

  /** Records an observation (custody-moves module). */
  note(o: HolderObservation): void {
    this.observe(o);
  }

  /** Schedules a timer event back to the owning actor after `ms` (a delayed event of the machine). */
  schedule(ms: number, e: HolderTimer): void {
    this.later(ms, e);
  }

  /** Asks the owning actor to handle `e` (async completions). */
  send(e: HolderInbound): void {
    if (!this.stopped) this.dispatch(e);
  }

  /** Lane runtime for `key`, created (custody-only; its arena actor from `spawnArena`) and subscribed when absent. */
  laneFor(volume: string, lane: string, spawnArena: SpawnLaneArena): HolderLane {
    const key = laneKey(volume, lane);
    let hl = this.lanes.get(key);
    if (hl === undefined) {
      hl = this.addLane(volume, lane, [], [], spawnArena);
      this.subscribeLane(key, hl);
    }
    return hl;
  }

  /** Publishes a receipt for `key` at once (after a transfer admission or a flush). */
  receiptNow(key: string): void {
    this.publishReceiptNow(key);
  }

  /** A transfer neighbor receipted `stated`: what we offered it of that is custody no more here. */
  completeTransfer(key: string, hl: HolderLane, from: string, stated: RangeSet): void {
    const seqs = hl.inTransfer.intersect(stated);
    if (seqs.isEmpty) return;
    const span = this.tracer.startSpan("holder.transfer_complete", {
      attributes: { "custody.lane": key, "custody.to": from },
    });
    if (hl.transferredOut(seqs, stated)) {
      this.dropSpilled(hl);
      this.observe({ type: "transferred_out", lane: key, to: from, seqs: seqs.toString() });
      if (this.granting) hl.grantor.topUpAll();
    }
    span.end();
  }
}
