import type { Clock } from "../../core/clock.ts";
import { Counters } from "../../core/counters.ts";
import { CustodyError } from "../../core/custody-error.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { commitControlEvent, type ControllerIdentity } from "../../custody/control-commit.ts";
import type { ControlSigner, ControlTrust } from "../../custody/control-trust.ts";
import { ControlConflictError } from "../../custody/control-error.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { overdueHolds, overdueReason } from "../../custody/control-holds.ts";
import type { ControlLogStore } from "../../custody/control-log.ts";
import { HolderStatus, receiptVerifyContext, releasedRanges, type ControlState } from "../../custody/control-state.ts";
import { AdmissionError, AdmissionRefusal, checkAutoAdmission, readAdmissionRequest, type AdmissionRequest } from "../../custody/admission.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ReceiptLedger } from "../../custody/receipt-ledger.ts";
import { evaluateState, type EvaluationReport } from "../../policies/evaluate.ts";
import { commitHistoryBounds, foldCommitHistory } from "../../policies/commit-log.ts";
import { Residency, type BaseSnapshot, type CommitRun, type EvaluationState, type RecoveryInFlight } from "../../policies/evaluation-state.ts";
import { authorizeReleases, withoutStaleClaims, type ReleaseRequest } from "../../policies/release.ts";
import { eventSubject, parseSubjectOf, receiptsOfVolume, receiptSubject, releaseSubject, statusSubject, subjectFilter } from "../../transport/subjects.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/transport.ts";
import { decodeAny, decodeMessage, encodeMessage } from "../../transport/wire/index.ts";
import { releaseFrontierSpec } from "../holder/holder-messages.ts";
import type { WriterProgressMessage } from "../writer/writer-messages.ts";
import { obligationIdOf, type ControllerConfig } from "./controller-config.ts";
import { buildEvaluationState, holdsAsPolicy, releaseCandidates } from "./evaluation-input.ts";
import { RepairStatusState, statusDocument, volumeStatusSpec, type RepairStatus, type VolumeStatus } from "./status-document.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import type { RepairConfig, StandbyHolder } from "./controller-config.ts";
import { failuresToRepair, repairIdOf, type FailureToRepair } from "./failure-repairs.ts";
import { runRepair } from "../repair.ts";
import { missingCoverage, type RepairInput } from "../repair/repair-steps.ts";
import { holdReads, type ReadHolds } from "./read-holds.ts";
import { CoverageRepair } from "./coverage-repair.ts";
import { ControllerSpend } from "./controller-spend.ts";
import { protectedRamOverBound } from "./protected-ram-check.ts";
import { retentionFloor } from "./retention-window.ts";

/**
 * How the controller reaches the world to repair: it starts (or finds) a standby holder and returns
 * its admission. Repairs read surviving units over NATS from the holders the ledger shows holding them.
 */
export interface RepairLauncher {
  /** Starts the standby holder (not yet admitted) and returns its admission record. */
  prepare(standby: StandbyHolder): Promise<HolderAdmission>;
}

export interface ControllerPorts {
  transport: Transport;
  clock: Clock;
  /** The region's control log (JetStream in production). */
  store: ControlLogStore;
  counters?: Counters;
  /** Used with `config.repair` to repair declared failures automatically. */
  repair?: RepairLauncher;
  /**
   * Test-only fault switch: replaces `authorizeReleases`. The simulator's weakened-release test
   * passes one to prove its checks can fail; no configuration file or CLI flag reaches this port.
   */
  authorizeReleases?: typeof authorizeReleases;
  /** A signed control log: only entries its operators (and the controllers they admitted) signed count. */
  trust?: ControlTrust;
  /** This controller's signing key (its id must be `config.controllerId`); needed to commit to a signed log. */
  signer?: ControlSigner;
}

/** One committed release, with the exact evaluation state it was decided on (for audits and tests). */
export interface ReleaseAudit {
  readonly state: EvaluationState;
  /** Every request granted in the same joint decision, in order (this one included). */
  readonly grantedTogether: readonly ReleaseRequest[];
  readonly request: ReleaseRequest;
  readonly controlSeq: number;
}

/** Release audits kept in memory (see `ControllerCore.audits`). */
export const MAX_AUDITS = 32;
/** Sequences one folded commit run below every cut may span (see `trimCommits`). */
export const COARSE_RUN_SEQS = 65_536;

/** A holder being admitted by `bootstrap` or a repair. */
export interface HolderAdmission {
  readonly holderId: string;
  readonly incarnation: number;
  readonly publicKey: Uint8Array;
  readonly failureDomain: string;
}

/**
 * The controller's working parts behind its machine: the receipt ledger (fed only by verified
 * signed batches), writer progress, bounded-frequency policy evaluation, ordered fenced control
 * commits (releases only when `authorizeReleases` grants them), release frontiers and the
 * per-volume status document.
 */
export class ControllerCore {
  readonly counters: Counters;
  readonly ledger: ReceiptLedger;
  readonly follower: ControlLogFollower;
  /**
   * The most recent committed releases with the exact state each was decided on (at most
   * `MAX_AUDITS`, for tests and operators). The durable record of every release is its
   * `release_ranges` event in the control log (holder, ranges, the holders it relied on).
   */
  readonly audits: ReleaseAudit[] = [];
  private readonly subs: TransportSubscription[] = [];
  private readonly heads: Record<string, number> = {};
  /** The writer's commit runs still needed to price and date what a scenario would lose (trimmed each round). */
  private commits: CommitRun[] = [];
  private readonly recoveries = new Map<string, RecoveryInFlight>();
  private bases: BaseSnapshot[];
  private lastStatus: VolumeStatus | undefined;
  private lastReport: EvaluationReport | undefined;
  dirty = true;
  /** Control-log sequence through which declare-failure events have been scanned. */
  private scannedSeq = 0;
  /** Failures seen by the last scan that have no repair record yet (launched by `startRepairs`). */
  private pendingFailures: FailureToRepair[] = [];
  /** Repair records keyed by the declare-failure sequence: each failure is handled once. */
  private readonly repairRecords = new Map<number, RepairStatus>();
  private stopped = false;
  private coverageTimer: unknown;
  /** Every holder's release frontier is re-sent in the next round (after a reconnect). */
  private frontiersDue = false;
  /** Admitted incarnation last seen per holder. */
  private readonly incarnationSeen = new Map<string, number>();
  /** Admission commits in flight (`holder#incarnation`), so repeated requests commit once. */
  private readonly admitting = new Set<string>();
  /** Copies that close coverage gaps (restarts, declared failures, single copies). */
  readonly coverage: CoverageRepair;
  /** The spend ceiling and budgets over the work this controller starts. */
  readonly spend: ControllerSpend;
  /** When this controller started: a retention window counts sequences it has no commit time for from here. */
  private readonly startedAtMs: number;
  /** Serializes control-log commits of this controller (evaluation rounds, repairs, operators). */
  private commitChain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly config: ControllerConfig,
    private readonly ports: ControllerPorts,
    private readonly dispatch: (e: { type: "nats.receipt" | "nats.event" | "nats.admit"; msg: InboundMessage } | { type: "timer.coverage" }) => void,
  ) {
    this.counters = ports.counters ?? new Counters();
    this.ledger = new ReceiptLedger({ clock: ports.clock, maxEvidenceAgeMs: config.topology.staleAfterMs, counters: this.counters });
    this.follower = new ControlLogFollower(ports.store, undefined, ports.trust);
    this.bases = [...config.topology.bases];
    this.startedAtMs = ports.clock.now();
    this.spend = new ControllerSpend(config.topology, config.spend, this.counters, ports.clock.now());
    // A bad drain layout is a configuration error now, not a failed evaluation round later.
    if (config.topology.protectedRam !== undefined) protectedRamOverBound(config.topology.protectedRam, [], []);
    this.coverage = new CoverageRepair(
      {
        volume: config.topology.volume,
        copier: config.controllerId,
        transport: ports.transport,
        clock: ports.clock,
        counters: this.counters,
        beginRecovery: (r) => this.beginRecovery(r),
        endRecovery: (id) => this.endRecovery(id),
        nudge: () => (this.dirty = true),
        admitCopy: (c) => this.spend.admitCopy(c, this.commits, ports.clock.now()),
      },
      { graceMs: config.coverageRepair?.graceMs ?? 1_000, retryMs: config.coverageRepair?.retryMs ?? 2_000, optional: config.coverageRepair?.optional },
    );
  }

  /** A new base snapshot exists (e.g. a replica materialized a cut): later evaluations may rely on it. */
  addBase(b: BaseSnapshot): void {
    this.bases = [...this.bases.filter((x) => x.id !== b.id), b];
    this.dirty = true;
  }

  private get volume(): string {
    return this.config.topology.volume;
  }

  /** Folds the control log and subscribes receipts, writer progress and admission requests. */
  async start(): Promise<void> {
    this.noteIncarnations(await this.follower.refresh());
    this.subs.push(this.ports.transport.subscribe(receiptsOfVolume(this.volume), (msg) => this.dispatch({ type: "nats.receipt", msg })));
    this.subs.push(this.ports.transport.subscribe(eventSubject(this.volume), (msg) => this.dispatch({ type: "nats.event", msg })));
    // After a reconnect what was published meanwhile is gone: evaluate again and re-send every
    // holder its release frontier in the next round.
    const unwatch = this.ports.transport.onConnection?.((e) => {
      this.counters.inc(`connection_${e}`);
      if (e === "reconnected") {
        this.frontiersDue = true;
        this.dirty = true;
      }
    });
    if (unwatch !== undefined) this.subs.push({ subject: "(connection)", unsubscribe: unwatch, drain: async () => unwatch() });
    this.scheduleCoverageCheck();
    if (this.config.admission === "key-continuity") {
      this.subs.push(this.ports.transport.subscribe(subjectFilter("admit"), (msg) => this.dispatch({ type: "nats.admit", msg })));
    }
    await this.ports.transport.flush();
  }

  /**
   * A holder's new incarnation asks to be admitted. Under the key-continuity policy it is committed
   * when the log already admitted that holder with the same key and failure domain and the
   * incarnation is higher; anything else is counted (`admission_<code>`) and left to an operator.
   */
  handleAdmission(msg: InboundMessage): void {
    let req: AdmissionRequest;
    try {
      req = readAdmissionRequest(msg.data);
      if (!(req.holderId in this.config.topology.holderSites) && !(this.config.repair?.standby ?? []).some((x) => x.holderId === req.holderId)) return;
      checkAutoAdmission(this.follower.state, req);
    } catch (err) {
      if (!(err instanceof AdmissionError && err.code === AdmissionRefusal.NotNewer)) this.counters.inc(err instanceof CustodyError ? err.code : "admission_malformed");
      return;
    }
    const key = `${req.holderId}#${req.incarnation}`;
    if (this.admitting.has(key)) return;
    this.admitting.add(key);
    this.commit((s) => {
      checkAutoAdmission(s, req);
      return { type: "admit_holder", holderId: req.holderId, incarnation: req.incarnation, publicKey: req.publicKey, failureDomain: req.failureDomain };
    })
      .then(({ state }) => {
        this.counters.inc("admission_committed");
        this.noteIncarnations(state);
      })
      .catch((err) => this.counters.inc(`admission_${err instanceof CustodyError ? err.code : "failed"}`))
      .finally(() => this.admitting.delete(key));
  }

  /**
   * Notices holders whose admitted incarnation went up: what their previous incarnation claimed
   * stops counting at once (dropped from the ledger; its RAM is gone; coverage repair refills what
   * scenarios now lack), and the new incarnation is told its release frontier.
   */
  private noteIncarnations(s: ControlState): void {
    for (const h of Object.values(s.holders)) {
      const prev = this.incarnationSeen.get(h.holderId);
      if (prev !== undefined && prev >= h.incarnation) continue;
      this.incarnationSeen.set(h.holderId, h.incarnation);
      this.ledger.admitIncarnation(h.holderId, h.incarnation);
      if (prev === undefined) continue;
      this.counters.inc("incarnation_admitted");
      this.dirty = true;
      for (const lane of this.config.topology.lanes) this.publishFrontier(s, obligationIdOf(this.volume, lane), h.holderId, lane);
    }
  }

  /** Unsubscribes. Idempotent. */
  stop(): void {
    this.stopped = true;
    if (this.coverageTimer !== undefined) this.ports.clock.clearTimeout(this.coverageTimer);
    for (const s of this.subs.splice(0)) s.unsubscribe();
  }

  private scheduleCoverageCheck(): void {
    if (this.stopped) return;
    this.coverageTimer = this.ports.clock.setTimeout(() => {
      this.coverageTimer = undefined;
      this.dispatch({ type: "timer.coverage" });
      this.scheduleCoverageCheck();
    }, this.config.coverageRepair?.checkMs ?? 500);
  }

  /**
   * Coverage repair between evaluation rounds: gaps are looked for on the current ledger and the
   * control log as last folded (no refresh, no evaluation), so a copy starts within `checkMs` of a
   * gap becoming overdue rather than at the next round.
   */
  checkCoverage(): void {
    const s = this.follower.state;
    this.coverage.progress(withoutStaleClaims(this.currentState(s)), s);
  }

  /**
   * A signed receipt batch: verified against the folded control log (admitted keys, incarnation,
   * fence) and merged into the ledger; a rejected batch is counted and changes nothing.
   * Ranges the control log released are subtracted when the state is built, not refused here:
   * a holder may keep claiming an authorized range until its whole segment recycles.
   */
  handleReceipt(msg: InboundMessage): void {
    try {
      const { volume, lane } = parseSubjectOf("receipt", msg.subject);
      const signed = decodeMessage(receiptBatchSpec, msg.data);
      const ctx = { ...receiptVerifyContext(this.follower.state, { volume, lane, subject: receiptSubject(volume, lane) }), released: () => RangeSet.EMPTY };
      this.ledger.apply(signed, ctx);
      this.counters.inc("receipt_batches");
      this.dirty = true;
    } catch (err) {
      this.counters.inc(`receipt_${err instanceof CustodyError ? err.code : "invalid"}`);
    }
  }

  /** Writer progress on the volume's event subject (other event kinds are ignored here). */
  handleEvent(msg: InboundMessage): void {
    let decoded;
    try {
      decoded = decodeAny(msg.data);
    } catch (err) {
      this.counters.inc(err instanceof CustodyError ? err.code : "malformed");
      return;
    }
    if (decoded.kind !== "writer-progress") return;
    const p = decoded.body as WriterProgressMessage;
    if (p.volume !== this.volume) return this.counters.inc("wrong_volume");
    for (const l of p.lanes) {
      if (!this.config.topology.lanes.includes(l.lane)) continue;
      this.heads[l.lane] = Math.max(this.heads[l.lane] ?? 0, l.head);
      for (const [first, last, at, bytes] of l.runs) this.addCommitRun({ lane: l.lane, first, last, committedAtMs: at, bytesPerSeq: bytes });
    }
    this.dirty = true;
  }

  private failedHolders(s: ControlState): Set<string> {
    return new Set(Object.values(s.holders).filter((h) => h.status === HolderStatus.failed).map((h) => h.holderId));
  }

  /** The evaluation input as of now (released ranges and failed holders already removed). */
  currentState(s: ControlState = this.follower.state, held = this.heldBy(s)): EvaluationState {
    // Only the admitted incarnation speaks for a holder: the moment a newer one is admitted, what
    // the previous one claimed (its RAM is gone) stops counting, receipted again or not.
    const admitted = this.ledger.holdings({ volume: this.volume }).filter((h) => s.holders[h.holderId]?.incarnation === h.incarnation);
    const holdings = admitted.map((h) => {
      const o = s.obligations[h.obligationId];
      const gone = o?.released[h.holderId];
      return gone ? { ...h, retained: h.retained.subtract(gone) } : h;
    });
    const commits = this.mergedCommits();
    const layout = this.config.topology.protectedRam;
    return buildEvaluationState({ ...this.config.topology, bases: this.bases }, holdings, { heads: this.heads, commits }, this.ports.clock.now(), this.failedHolders(s), {
      recoveries: [...this.recoveries.values(), ...held.recoveries],
      pins: held.pins,
      protectedOverBound: layout === undefined ? undefined : protectedRamOverBound(layout, holdings, commits),
      retentionUnknownCommittedAtMs: this.startedAtMs,
    });
  }

  /** The control log's holds on this volume as pins and recoveries for the release rule. */
  private heldBy(s: ControlState): ReturnType<typeof holdsAsPolicy> {
    return holdsAsPolicy(s.holds, this.volume, Object.keys(this.config.topology.holderSites));
  }

  /** Appends a run, merged into the last one of its lane when it continues it (same time and size). */
  private addCommitRun(c: CommitRun): void {
    for (let i = this.commits.length - 1; i >= 0 && i >= this.commits.length - 8; i--) {
      const prev = this.commits[i]!;
      if (prev.lane !== c.lane) continue;
      if (prev.last + 1 === c.first && prev.committedAtMs === c.committedAtMs && prev.bytesPerSeq === c.bytesPerSeq) {
        this.commits[i] = { ...prev, last: c.last };
        return;
      }
      break;
    }
    this.commits.push(c);
  }

  private mergedCommits(): CommitRun[] {
    return this.commits;
  }

  /**
   * Keeps commit history small without losing what reports need (see `foldCommitHistory`): exact
   * above each lane's lowest cut, coarse below it, one run below what any holder still retains.
   */
  private trimCommits(state: EvaluationState, report: EvaluationReport): void {
    const { floor, horizon } = commitHistoryBounds(state, report, this.config.topology.lanes);
    const w = this.config.topology.retention;
    if (w !== undefined) for (const [lane, f] of Object.entries(retentionFloor(w, this.commits, this.config.topology.lanes, state.asOfMs))) floor[lane] = Math.min(floor[lane] ?? f, f);
    this.commits = foldCommitHistory(this.commits, floor, horizon, COARSE_RUN_SEQS);
  }

  /** Commit runs kept for evaluation (bounded by what is retained and unprotected, not by age). */
  get commitRunCount(): number {
    return this.commits.length;
  }

  /**
   * One evaluation round (called by the machine at a bounded rate, never per write): refresh the
   * control log, evaluate every scenario, commit the releases the policy grants (in order, each
   * fenced and re-checked by the fold), publish release frontiers and the status document.
   */
  /** Who this controller commits as: its id, clock and, for a signed log, its key. */
  private identity(): ControllerIdentity {
    return { controller: this.config.controllerId, clock: this.ports.clock, ...(this.ports.signer ? { signer: this.ports.signer } : {}) };
  }

  evaluate(): Promise<VolumeStatus> {
    return this.exclusive(() => this.evaluateRound());
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.commitChain.then(fn, fn);
    this.commitChain = p.catch(() => undefined);
    return p;
  }

  private async evaluateRound(): Promise<VolumeStatus> {
    const t0 = performance.now();
    try {
      return await this.evaluateRoundTimed();
    } finally {
      this.evalMs.push(performance.now() - t0);
      if (this.evalMs.length > 4096) this.evalMs.splice(0, this.evalMs.length - 4096);
    }
  }

  /** Durations (ms) of the evaluation rounds since the last call (at most the newest 4096). */
  takeEvalDurations(): number[] {
    return this.evalMs.splice(0);
  }

  private readonly evalMs: number[] = [];
  /** When each holder's last release was committed (releaseEveryMs). */
  private readonly lastReleaseAt = new Map<string, number>();
  /** Holders seen persisting (a disk claim): their copies are released only onto disk or a base. */
  private readonly durableHolders = new Set<string>();

  private async evaluateRoundTimed(): Promise<VolumeStatus> {
    this.dirty = false;
    this.counters.inc("evaluations");
    let s = await this.follower.refresh();
    this.noteIncarnations(s);
    if (this.frontiersDue) {
      this.frontiersDue = false;
      for (const h of Object.keys(s.holders)) for (const lane of this.config.topology.lanes) this.publishFrontier(s, obligationIdOf(this.volume, lane), h, lane);
    }
    await this.scanFailures(s);
    s = await this.endOverdueHolds(s);
    const held = this.heldBy(s);
    const state = this.currentState(s, held);
    const report = evaluateState(state);
    this.trimCommits(state, report);
    this.coverage.progress(withoutStaleClaims(state), s);
    for (const h of state.holders) if (h.claims.some((c) => c.residency === Residency.disk)) this.durableHolders.add(h.id);
    const now = this.ports.clock.now();
    const every = this.config.releaseEveryMs ?? 1_000;
    const due = (h: string) => s.holders[h]?.status === HolderStatus.active && now - (this.lastReleaseAt.get(h) ?? -Infinity) >= every;
    const requests: ReleaseRequest[] = releaseCandidates(state, this.config.topology.releasable.filter(due), this.durableHolders, held);
    const decisions = requests.length > 0 ? (this.ports.authorizeReleases ?? authorizeReleases)(state, requests) : [];
    const granted = decisions.filter((d) => d.allowed).map((d) => d.request);
    for (const d of decisions) {
      if (d.allowed) continue;
      this.counters.inc("release_denied");
      for (const r of new Set(d.reasons)) this.counters.inc(`release_denied.${r}`);
    }
    for (const req of granted) {
      const obligationId = obligationIdOf(this.volume, req.lane);
      try {
        const { seq, state: next } = await commitControlEvent(this.ports.store, this.follower, this.identity(), (cur) => this.releaseBody(cur, obligationId, req, state));
        s = next;
        this.audits.push({ state, grantedTogether: granted, request: req, controlSeq: seq });
        if (this.audits.length > MAX_AUDITS) this.audits.splice(0, this.audits.length - MAX_AUDITS);
        this.counters.inc("release_committed");
        this.lastReleaseAt.set(req.holder, now);
        this.publishFrontier(s, obligationId, req.holder, req.lane);
      } catch (err) {
        this.counters.inc(`release_${err instanceof CustodyError ? err.code : "failed"}`);
      }
    }
    const doc = statusDocument(this.config.controllerId, s.lastSeq, state, report, this.counters.get("release_committed"), this.repairs, this.spend.report(now, this.coverage.deferred));
    this.lastStatus = doc;
    this.lastReport = report;
    this.ports.transport.publish(statusSubject(this.volume), encodeMessage(volumeStatusSpec, doc));
    return doc;
  }

  /**
   * Ends this volume's holds whose time is up: a retention window that closed, or a recovery that
   * did not end its own hold by its deadline (its process died) — it must not block releases forever.
   */
  private async endOverdueHolds(s: ControlState): Promise<ControlState> {
    for (const h of overdueHolds(s.holds, this.volume, this.ports.clock.now())) {
      try {
        s = (await commitControlEvent(this.ports.store, this.follower, this.identity(), () => ({ type: "end_hold", holdId: h.holdId, reason: overdueReason(h) }))).state;
        this.counters.inc(`hold_expired.${h.kind}`);
      } catch (err) {
        this.counters.inc(`hold_end_${err instanceof CustodyError ? err.code : "failed"}`);
      }
    }
    return s;
  }

  /**
   * Reads the control-log entries committed since the last scan and notes the declare-failure
   * events that still need a repair. The first scan (also after a restart) reads the whole log, so
   * a failure whose repair already completed (a later activate_replacement) is never repaired again.
   */
  private async scanFailures(s: ControlState): Promise<void> {
    if (s.lastSeq <= this.scannedSeq) return;
    const entries = this.scannedSeq === 0 ? await this.ports.store.readAll() : await this.ports.store.readFrom(this.scannedSeq + 1);
    const upTo = entries.filter((e) => e.seq > this.scannedSeq && e.seq <= s.lastSeq);
    this.scannedSeq = s.lastSeq;
    const obligations = this.config.topology.lanes.map((l) => obligationIdOf(this.volume, l));
    const open = failuresToRepair(upTo, s, obligations).filter((f) => !this.repairRecords.has(f.seq));
    for (const f of open) {
      if (this.config.repair === undefined || this.ports.repair === undefined) {
        this.repairRecords.set(f.seq, { failureSeq: f.seq, state: RepairStatusState.needed, failed: [...f.failed], reason: "no repair section configured" });
        this.counters.inc("repair_needed");
      } else if (!this.pendingFailures.some((p) => p.seq === f.seq)) this.pendingFailures.push(f);
    }
  }

  /** True when the last scan found declared failures whose repair has not been started. */
  get repairsPending(): boolean {
    return this.pendingFailures.length > 0;
  }

  /**
   * Starts one repair task per pending declared failure (once per control-log sequence), with the
   * first standby holder never admitted. Runs in the background; its outcome (measured time next to
   * the estimate) lands in `repairs` and the next status document. Never throws.
   */
  startRepairs(): void {
    const cfg = this.config.repair;
    const launcher = this.ports.repair;
    for (const f of this.pendingFailures.splice(0)) {
      if (this.repairRecords.has(f.seq) || cfg === undefined || launcher === undefined) continue;
      const taken = new Set([...this.repairRecords.values()].map((r) => r.replacement));
      const standby = cfg.standby.find((c) => this.follower.state.holders[c.holderId] === undefined && !taken.has(c.holderId));
      if (standby === undefined) {
        this.repairRecords.set(f.seq, { failureSeq: f.seq, state: RepairStatusState.needed, failed: [...f.failed], reason: "no unused standby holder" });
        this.counters.inc("repair_needed");
        this.dirty = true;
        continue;
      }
      this.repairRecords.set(f.seq, { failureSeq: f.seq, state: RepairStatusState.running, failed: [...f.failed], replacement: standby.holderId });
      this.counters.inc("repair_started");
      void this.repairOne(f, standby, cfg, launcher);
    }
  }

  private async repairOne(f: FailureToRepair, standby: StandbyHolder, cfg: RepairConfig, launcher: RepairLauncher): Promise<void> {
    const base = { failureSeq: f.seq, failed: [...f.failed], replacement: standby.holderId };
    let reads: ReadHolds | undefined;
    try {
      const replacement = await launcher.prepare(standby);
      const input: RepairInput = {
        repairId: repairIdOf(this.volume, f.seq),
        volume: this.volume,
        lanes: this.config.topology.lanes,
        failed: f.failed,
        replacement,
        controller: this,
        transport: this.ports.transport,
        clock: this.ports.clock,
        repairBandwidthBytesPerSec: cfg.bandwidthBytesPerSec,
        receiptTimeoutMs: cfg.receiptTimeoutMs,
      };
      // What the repair reads is held in the control log too (not only in this controller's memory).
      reads = await holdReads((b) => this.commit(b), this.ports.clock, { id: input.repairId, volume: this.volume, ranges: missingCoverage(input), leaseMs: cfg.readLeaseMs ?? 600_000, by: `repair of failure ${f.seq}` });
      const report = await runRepair(input);
      const est = report.estimate.totalSec;
      this.repairRecords.set(f.seq, { ...base, state: RepairStatusState.done, measuredMs: report.measuredMs, estimateMs: Number.isFinite(est) ? est * 1000 : null, copiedBytes: report.copiedBytes });
      this.counters.inc("repair_completed");
    } catch (err) {
      this.repairRecords.set(f.seq, { ...base, state: RepairStatusState.failed, reason: err instanceof Error ? err.message.slice(0, 512) : String(err).slice(0, 512) });
      this.counters.inc(`repair_${err instanceof CustodyError ? err.code : "failed"}`);
    }
    await reads?.end("repair finished");
    this.dirty = true;
  }

  /** Every declared failure this controller has seen and what became of its repair, by sequence. */
  get repairs(): RepairStatus[] {
    return [...this.repairRecords.values()].sort((a, b) => a.failureSeq - b.failureSeq);
  }

  /** The release event body, or a throw (abstain) when no active, responsible holder backs it. */
  private releaseBody(cur: ControlState, obligationId: string, req: ReleaseRequest, state: EvaluationState): ControlEventBody {
    const o = cur.obligations[obligationId];
    if (o === undefined) throw new CustodyError("unknown_obligation", `no obligation ${obligationId}`, { obligationId });
    const already = o.released[req.holder] ?? RangeSet.EMPTY;
    const ranges = req.ranges.subtract(already).intersect(o.responsible[req.holder] ?? RangeSet.EMPTY);
    if (ranges.isEmpty) throw new CustodyError("nothing_to_release", "ranges already released or not this holder's responsibility", {});
    // Who keeps what this release gives up: active holders responsible for it with fresh claims on it.
    const keepers = withoutStaleClaims(state)
      .holders.filter((h) => h.id !== req.holder && cur.holders[h.id]?.status === HolderStatus.active)
      .map((h) => ({ id: h.id, keeps: h.claims.filter((c) => c.lane === req.lane).reduce((a, c) => a.union(c.ranges), RangeSet.EMPTY).intersect(ranges).intersect(o.responsible[h.id] ?? RangeSet.EMPTY) }));
    const reliesOn = keepers.filter((k) => k.keeps.coversAll(ranges)).map((k) => k.id);
    if (reliesOn.length > 0) return { type: "release_ranges", obligationId, holderId: req.holder, ranges, reliesOn };
    // The policy may have counted several keepers together (one holds the older part, another the
    // newer). The control log wants one keeper responsible for every released range, so release the
    // part the best single keeper has — a subset of an authorized release is safe — unless a base
    // covers everything.
    const best = keepers.sort((a, b) => b.keeps.count - a.keeps.count)[0];
    const coveredByBase = state.bases.some((b) => (b.cut[req.lane] ?? -1) >= (ranges.max ?? 0) && cur.holders[b.holder]?.status === HolderStatus.active);
    if (!coveredByBase && best !== undefined && !best.keeps.isEmpty) {
      this.counters.inc("release_narrowed");
      return { type: "release_ranges", obligationId, holderId: req.holder, ranges: best.keeps, reliesOn: [best.id] };
    }
    // No other holder keeps them: a base an active holder keeps may contain them (a rolling base).
    const base = state.bases
      .filter((b) => (b.cut[req.lane] ?? -1) >= (ranges.max ?? 0) && cur.holders[b.holder]?.status === HolderStatus.active)
      .sort((a, b) => (b.cut[req.lane] ?? 0) - (a.cut[req.lane] ?? 0))[0];
    if (base === undefined) throw new CustodyError("release_not_covered", "no active responsible holder retains these ranges and no base contains them", { holder: req.holder });
    return { type: "release_to_base", obligationId, holderId: req.holder, ranges, baseHolder: base.holder, snapshotId: base.id.slice(base.id.indexOf("/") + 1), baseThroughSeq: base.cut[req.lane]! };
  }

  private publishFrontier(s: ControlState, obligationId: string, holder: string, lane: string): void {
    const ranges = releasedRanges(s, obligationId, holder);
    this.ports.transport.publish(
      releaseSubject(holder),
      encodeMessage(releaseFrontierSpec, { holder, volume: this.volume, lane, ranges: ranges.toJSON(), epoch: s.topologyEpoch, controlSeq: s.lastSeq }),
    );
  }

  /** Commits `body` (fenced, chained, optimistic). Throws ControlFenceError / ControlConflictError. */
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }> {
    return this.exclusive(async () => {
      // Another controller may commit concurrently: on a conflict the whole decision is re-run on
      // the refreshed state (never just re-sent), a bounded number of times.
      for (let attempt = 1; ; attempt++) {
        try {
          const r = await commitControlEvent(this.ports.store, this.follower, this.identity(), body);
          this.dirty = true;
          return r;
        } catch (err) {
          if (!(err instanceof ControlConflictError) || attempt >= 5) throw err;
          this.counters.inc("control_conflict_retry");
        }
      }
    });
  }

  /** Admits holders and creates one obligation per lane naming `responsible` from `fromSeq` on. */
  async bootstrap(holders: readonly HolderAdmission[], responsible: readonly string[], fromSeq = 1): Promise<void> {
    for (const h of holders) await this.commit(() => ({ type: "admit_holder", ...h }));
    for (const lane of this.config.topology.lanes) {
      await this.commit(() => ({ type: "create_obligation", obligationId: obligationIdOf(this.volume, lane), volume: this.volume, lane, representation: "raw", holders: responsible, fromSeq }));
    }
  }

  /** A recovery or repair is reading `ranges` of `lane`: releases of them are refused until `endRecovery`. */
  beginRecovery(r: RecoveryInFlight): void {
    this.recoveries.set(r.id, r);
    this.dirty = true;
  }

  endRecovery(id: string): void {
    this.recoveries.delete(id);
    this.dirty = true;
  }

  /** The newest status document (undefined before the first evaluation). */
  get status(): VolumeStatus | undefined {
    return this.lastStatus;
  }

  /** The newest evaluation report. */
  get report(): EvaluationReport | undefined {
    return this.lastReport;
  }
}
