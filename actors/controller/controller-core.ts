import { Counters, CustodyError, DurationWindow } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import {
  commitControlEvent,
  ControlConflictError,
  ControlLogFollower,
  checkAutoAdmission,
  overdueHolds,
  overdueReason,
} from "../../custody/index.ts";
import type {
  ControlEventBody,
  ControllerIdentity,
  AdmissionRequest,
  ControlState,
  Holding,
  HoldingFilter,
  ReceiptLedger,
} from "../../custody/index.ts";
import {
  DEFAULT_VERDICT_TIMING,
  evaluateState,
  steadyVerdicts,
  withoutStaleClaims,
  type BaseSnapshot,
  type EvaluationReport,
  type EvaluationState,
  type RecoveryInFlight,
} from "../../policies/index.ts";
import {
  encodeMessage,
  eventSubject,
  receiptsOfVolume,
  releaseFrontierSpec,
  releaseSubject,
  statusSubject,
  subjectFilter,
  volumeStatusSpec,
} from "../../transport/protocol/index.ts";
import type { ReleaseFrontierMessage, RepairStatus, VolumeStatus } from "../../transport/protocol/index.ts";
import type { TransportSubscription } from "../../transport/index.ts";
import { buildEvaluationState, holdsAsPolicy } from "./evaluation-input.ts";
import { statusDocument } from "./status-document.ts";
import { countedHoldings, failedHolders } from "./log-evaluation.ts";
import { CoverageRepair } from "./coverage-repair.ts";
import { historyBounds, sightRetained } from "./commit-history.ts";
import { FailureRepairRunner } from "./failure-repair-runner.ts";
import { inProcessRepairPort } from "./in-process-repair-port.ts";
import type { RepairOutcome } from "../repair/index.ts";
import { ControllerSpend } from "./controller-spend.ts";
import { ControllerRoutes } from "./controller-routes.ts";
import { protectedRamOverBound } from "./protected-ram-check.ts";
import { startRetentionAudits, type RetentionAudits } from "./retention-audits.ts";
import { PersistenceTargetChooser } from "./persistence-target-chooser.ts";
import { ImageCustody } from "./image-custody.ts";
import type { ControllerConfig } from "./controller-config.ts";
import type { ControllerPorts, ReleaseAudit } from "./controller-ports.ts";
import { FailoverService } from "./failover-service.ts";
import { ReleaseRound } from "./release-round.ts";
import { commitFailover } from "./failover.ts";
import type { ControllerHandle } from "./controller-handle.ts";
import { fencedRows } from "./fenced-speakers.ts";
import { ledgerHoldings } from "./controller-ledger.ts";
import type { ControllerData } from "./controller-state.ts";
import { releaseFrontier, type ControllerDispatch } from "./controller-step.ts";
import type { ControllerEffect } from "./controller-effects.ts";
import { failureOf } from "./controller-requests.ts";
export {
  COARSE_RUN_SEQS,
  MAX_AUDITS,
  type ControllerPorts,
  type HolderAdmission,
  type ReleaseAudit,
  type RepairLauncher,
} from "./controller-ports.ts"; // re-exported for callers that know them from here

/**
 * The controller's working parts behind its machine: the receipt ledger (fed only by verified
 * signed batches), writer progress, bounded-frequency policy evaluation, ordered fenced control
 * commits (releases only when `authorizeReleases` grants them), release frontiers, persistence
 * targets, the status document and, when configured, retention audits (unproven claims do not count).
 */
export class ControllerCore implements ControllerHandle {
  readonly counters: Counters;
  /** The verified holdings of the ledger the machine folds (see controller-ledger.ts). */
  readonly ledger: Pick<ReceiptLedger, "holdings">;
  readonly follower: ControlLogFollower;
  /** Its releases, one round per evaluation (see ReleaseRound). */
  private readonly releases: ReleaseRound;
  private readonly subs: TransportSubscription[] = [];
  private lastReport: EvaluationReport | undefined;
  private stopped = false;
  readonly coverage: CoverageRepair; // copies that close coverage gaps (restarts, declared failures, single copies)
  private readonly failureRepairs: FailureRepairRunner; // repairs of the failures the control log declares
  /** The spend ceiling and budgets over the work this controller starts. */
  readonly spend: ControllerSpend;
  retentionAudits: RetentionAudits | undefined;
  readonly routes: ControllerRoutes; // measured routes (`config.routes`)
  private readonly persistence: PersistenceTargetChooser; // `config.persistenceTargets`
  private readonly images: ImageCustody; // coalesced windows a base contains are released
  /** Answers failover requests of a new writer or the operator (custody.v1.failover.<volume>). */
  readonly failovers: FailoverService;
  /** Serializes control-log commits of this controller (evaluation rounds, repairs, operators). */
  private commitChain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly config: ControllerConfig,
    readonly ports: ControllerPorts,
    private readonly dispatch: ControllerDispatch,
    /** The machine's plain data as it stands (receipts, writer progress, admitted incarnations). */
    private readonly data: () => ControllerData,
  ) {
    this.counters = ports.counters ?? new Counters();
    this.ledger = {
      holdings: (filter: HoldingFilter = {}): Holding[] =>
        ledgerHoldings(this.data().ledger, filter, ports.clock.now(), config.topology.staleAfterMs),
    };
    this.follower = new ControlLogFollower(ports.store, undefined, ports.trust);
    this.releases = new ReleaseRound({
      config,
      ports,
      counters: this.counters,
      follower: this.follower,
      volume: config.topology.volume,
      identity: () => this.identity(),
      publishFrontier: (s, o, h, l) => this.publishFrontier(s, o, h, l),
      memory: () => this.data().releases,
      note: (e) => this.dispatch(e),
      execute: (e) => this.execute(e),
    });
    this.spend = new ControllerSpend(config.topology, config.spend, this.counters, ports.clock.now());
    this.routes = new ControllerRoutes(config.routes);
    // A bad drain layout is a configuration error now, not a failed evaluation round later.
    if (config.topology.protectedRam !== undefined) protectedRamOverBound(config.topology.protectedRam, [], []);
    this.failureRepairs = new FailureRepairRunner({
      config,
      ports,
      counters: this.counters,
      controlState: () => this.follower.state,
      commit: (b) => this.commit(b),
      port: inProcessRepairPort(this),
      launch: (launch) => this.dispatch({ type: "repair.launch", launch }),
      repairBandwidth: (site, configured) => this.routes.repairBandwidth(this.currentState(), site, configured),
      nudge: () => this.nudge(),
    });
    this.persistence = new PersistenceTargetChooser(config, {
      counters: this.counters,
      commit: (b) => commitControlEvent(ports.store, this.follower, this.identity(), b),
    });
    this.images = new ImageCustody(config.topology, {
      counters: this.counters,
      commit: (b) => commitControlEvent(ports.store, this.follower, this.identity(), b),
      publishFrontier: (s, o, h, l) => this.publishFrontier(s, o, h, l),
    });
    this.failovers = new FailoverService({
      volume: config.topology.volume,
      transport: ports.transport,
      commit: (req) => commitFailover(this, req),
    });
    this.coverage = this.newCoverageRepair();
  }

  /** The coverage repair of this controller's volume, wired to its spend guard, audits and standby enlistment. */
  private newCoverageRepair(): CoverageRepair {
    return new CoverageRepair(
      {
        volume: this.config.topology.volume,
        copier: this.config.controllerId,
        transport: this.ports.transport,
        clock: this.ports.clock,
        counters: this.counters,
        beginRecovery: (r) => this.beginRecovery(r),
        endRecovery: (id) => this.endRecovery(id),
        nudge: () => this.nudge(),
        admitCopy: (c) => this.spend.admitCopy(c, this.data().history.runs, this.ports.clock.now()),
        unproven: () => this.retentionAudits?.unproven() ?? new Set(),
        enlist: (lane, gap, survives) => this.failureRepairs.enlist(lane, gap, survives),
      },
      {
        graceMs: this.config.coverageRepair?.graceMs ?? 1_000,
        retryMs: this.config.coverageRepair?.retryMs ?? 2_000,
        optional: this.config.coverageRepair?.optional,
      },
    );
  }

  /** The most recent committed releases with the state each was decided on (see ReleaseRound.audits). */
  get audits(): ReleaseAudit[] {
    return this.releases.audits;
  }

  /** A new base snapshot exists (e.g. a replica materialized a cut): later evaluations may rely on it. */
  addBase(b: BaseSnapshot): void {
    this.dispatch({ type: "base.added", base: b });
  }

  /** Something the evaluation depends on changed: the machine evaluates again at its next interval. */
  private nudge(): void {
    this.dispatch({ type: "nudge" });
  }

  private get volume(): string {
    return this.config.topology.volume;
  }

  /** Folds the control log and subscribes receipts, writer progress and admission requests. */
  async start(): Promise<void> {
    this.dispatch({ type: "control.folded", control: await this.follower.refresh() });
    // A receipt is verified against the log as folded when it arrives (and dated by this clock).
    this.subs.push(
      this.ports.transport.subscribe(receiptsOfVolume(this.volume), (msg) =>
        this.dispatch({ type: "nats.receipt", msg, control: this.follower.state, nowMs: this.ports.clock.now() }),
      ),
    );
    this.subs.push(
      this.ports.transport.subscribe(eventSubject(this.volume), (msg) => this.dispatch({ type: "nats.event", msg })),
    );
    this.subs.push(...this.routes.listen(this.ports.transport, this.ports.clock, this.counters));
    // After a reconnect what was published meanwhile is gone: evaluate again and re-send every
    // holder its release frontier in the next round.
    const unwatch = this.ports.transport.onConnection?.((change) => this.dispatch({ type: "connection", change }));
    if (unwatch !== undefined)
      this.subs.push({ subject: "(connection)", unsubscribe: unwatch, drain: async () => unwatch() });
    if (!this.stopped)
      this.retentionAudits = startRetentionAudits(
        this.config,
        this.ports,
        {
          counters: this.counters,
          ledger: this.ledger,
          controlState: () => this.follower.state,
          dispatch: this.dispatch,
          nudge: () => this.nudge(),
        },
        this.subs,
      );
    if (!this.stopped)
      this.dispatch({ type: "timer.arm", ms: this.coverageCheckMs, event: { type: "timer.coverage" } });
    // Repairs handed to a worker ask this controller over NATS (only when repairs are delegated).
    this.subs.push(...this.failureRepairs.subscribe((msg) => this.dispatch({ type: "nats.repair", msg })));
    this.subs.push(this.failovers.subscribe((msg) => this.dispatch({ type: "nats.failover", msg })));
    if (this.config.admission === "key-continuity") {
      this.subs.push(
        this.ports.transport.subscribe(subjectFilter("admit"), (msg) =>
          this.dispatch({ type: "nats.admit", msg, control: this.follower.state }),
        ),
      );
    }
    await this.ports.transport.flush();
  }

  /**
   * Runs one effect of the machine's step that reaches the world: a release frontier published,
   * a holder's re-admission committed (its outcome goes back to the machine as an event).
   */
  execute(e: ControllerEffect): void {
    switch (e.type) {
      case "count":
        return this.counters.inc(e.name, e.by);
      case "publishFrontier":
        return this.sendFrontier(e.frontier);
      case "commitAdmission":
        return this.commitAdmission(e.key, e.request, e.data);
      case "respond":
        return this.ports.transport.respond(e.msg, e.payload);
      case "commitFailover":
        return void this.failovers.commit(e.request).then(
          (plan) => this.dispatch({ type: "failover.committed", msg: e.msg, plan }),
          (err: unknown) =>
            this.dispatch({ type: "failover.failed", msg: e.msg, ...failureOf(err, "failover_request_failed") }),
        );
      case "answerRepair":
        return void this.failureRepairs.answer(e.op, e.msg.data).then(
          (payload) => this.dispatch({ type: "repair.answered", msg: e.msg, payload }),
          (err: unknown) =>
            this.dispatch({ type: "repair.failed", msg: e.msg, ...failureOf(err, "repair_request_failed") }),
        );
      case "publishStatus":
        return this.ports.transport.publish(statusSubject(this.volume), encodeMessage(volumeStatusSpec, e.status));
    }
  }

  private commitAdmission(key: string, req: AdmissionRequest, data: Uint8Array): void {
    this.commit((s) => {
      checkAutoAdmission(s, req);
      // The holder's own request rides along: with it a controller of any one of a shared holder's
      // volumes may commit the re-admission (custody/control-scope.ts authorityScope).
      return {
        type: "admit_holder",
        holderId: req.holderId,
        incarnation: req.incarnation,
        publicKey: req.publicKey,
        failureDomain: req.failureDomain,
        request: data,
      };
    }).then(
      ({ state }) => this.dispatch({ type: "admission.committed", key, control: state }),
      (err: unknown) =>
        this.dispatch({ type: "admission.failed", key, code: err instanceof CustodyError ? err.code : "failed" }),
    );
  }

  /** Unsubscribes. Idempotent. */
  stop(): void {
    this.stopped = true;
    for (const s of this.subs.splice(0)) s.unsubscribe();
  }

  /**
   * Coverage repair between evaluation rounds: gaps are looked for on the current ledger and the
   * control log as last folded (no refresh, no evaluation), so a copy starts within `checkMs` of a
   * gap becoming overdue rather than at the next round (on each `timer.coverage`).
   */
  checkCoverage(): void {
    const s = this.follower.state;
    this.coverage.progress(withoutStaleClaims(this.currentState(s)), s);
  }

  get coverageCheckMs(): number {
    return this.config.coverageRepair?.checkMs ?? 500;
  }

  /** The evaluation input as of now (released ranges and failed holders already removed). */
  currentState(s: ControlState = this.follower.state, held = this.heldBy(s)): EvaluationState {
    // Only the admitted incarnation speaks for a holder: the moment a newer one is admitted, what
    // the previous one claimed (its RAM is gone) stops counting, receipted again or not.
    const holdings = countedHoldings(
      this.ledger.holdings({ volume: this.volume }),
      s,
      (h) => this.retentionAudits?.isUnproven(h) === true,
    );
    const data = this.data();
    const commits = [...data.history.runs];
    const layout = this.config.topology.protectedRam;
    const now = this.ports.clock.now();
    // What no commit run dates yet is dated by when it was first seen retained: for a retention
    // window, and for the steady verdicts (a receipt often arrives before the progress dating it).
    // The machine records the sightings; this evaluation uses them at once.
    let history = data.history;
    for (const h of holdings) history = sightRetained(history, h.lane, h.retained, now);
    if (history !== data.history)
      this.dispatch({
        type: "sighted",
        sightings: holdings.map((h) => ({ lane: h.lane, ranges: h.retained.toJSON() })),
        nowMs: now,
      });
    return this.routes.apply(
      buildEvaluationState(
        { ...this.config.topology, bases: data.bases },
        holdings,
        { heads: data.heads, commits },
        now,
        failedHolders(s),
        {
          recoveries: [
            ...Object.values(data.recoveries).map((r) => ({ ...r, ranges: RangeSet.fromJSON(r.ranges) })),
            ...held.recoveries,
          ],
          pins: held.pins,
          protectedOverBound: layout === undefined ? undefined : protectedRamOverBound(layout, holdings, commits),
          retentionUnknownCommittedAtMs: now, // everything retained was just sighted: this never applies
          retentionSightings: [...history.sightings.runs],
        },
      ),
    );
  }

  /** The control log's holds on this volume as pins and recoveries for the release rule. */
  private heldBy(s: ControlState): ReturnType<typeof holdsAsPolicy> {
    return holdsAsPolicy(s.holds, this.volume, Object.keys(this.config.topology.holderSites));
  }

  /** Commit runs kept for evaluation (bounded by what is retained and unprotected, not by age). */
  get commitRunCount(): number {
    return this.data().history.runs.length;
  }

  /** Who this controller commits as: its id, clock and, for a signed log, its key. */
  private identity(): ControllerIdentity {
    return {
      controller: this.config.controllerId,
      clock: this.ports.clock,
      ...(this.ports.signer ? { signer: this.ports.signer } : {}),
    };
  }

  /**
   * An evaluation round (run by the machine at a bounded rate, never per write) in two phases, each
   * serialized with this controller's other commits. `readLog`: the control log folded again (the
   * machine notes the admitted incarnations), release frontiers re-sent after a reconnect, declared
   * failures noticed, overdue holds ended.
   */
  readLog(): Promise<void> {
    this.roundStartedAt = performance.now();
    return this.exclusive(() => this.readLogNow());
  }

  /**
   * `decide`: every scenario evaluated on the log as now folded, coverage repair, persistence
   * targets, the releases the policy grants committed (in order, each fenced and re-checked by the
   * fold) with their frontiers, and the status document, which the machine publishes.
   */
  decide(): Promise<VolumeStatus> {
    return this.exclusive(() => this.decideNow()).finally(() =>
      this.evalMs.record(performance.now() - this.roundStartedAt),
    );
  }

  private roundStartedAt = 0;

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.commitChain.then(fn, fn);
    this.commitChain = p.catch(() => undefined);
    return p;
  }

  /** Durations (ms) of the evaluation rounds since the last call (at most the newest 4096). */
  takeEvalDurations(): number[] {
    return this.evalMs.take();
  }

  private readonly evalMs = new DurationWindow(4096);

  private async readLogNow(): Promise<void> {
    this.counters.inc("evaluations");
    const s = await this.follower.refresh();
    this.dispatch({ type: "control.folded", control: s });
    await this.failureRepairs.scan(s);
    await this.endOverdueHolds(s);
  }

  private async decideNow(): Promise<VolumeStatus> {
    let s = this.follower.state;
    const held = this.heldBy(s);
    const state = this.currentState(s, held);
    const report = evaluateState(state);
    const { lanes, retention } = this.config.topology;
    this.dispatch({
      type: "history.trim",
      bounds: historyBounds(this.data().history, state, report, lanes, retention),
    });
    this.coverage.progress(withoutStaleClaims(state), s);
    s = await this.persistence.step(s, state);
    const now = this.ports.clock.now();
    s = await this.releases.run(s, state, held, now);
    s = await this.images.step(s, state);
    // The document's verdicts mean a loss: writes in flight are not lost, and a loss counts after its grace.
    const steady = steadyVerdicts(
      state,
      report,
      { ...DEFAULT_VERDICT_TIMING, ...this.config.verdict },
      this.data().verdicts,
      [...this.data().history.sightings.runs],
    );
    this.dispatch({ type: "verdicts.noted", memory: steady.memory });
    this.lastReport = report;
    return statusDocument(
      this.config.controllerId,
      s.lastSeq,
      state,
      { ...report, reports: steady.reports },
      this.counters.get("release_committed"),
      this.repairs,
      this.spend.report(now, this.coverage.deferred),
      this.retentionAudits?.rows(),
      fencedRows(this.data().fenced, now),
    );
  }

  /**
   * Ends this volume's holds whose time is up: a retention window that closed, or a recovery that
   * did not end its own hold by its deadline (its process died) — it must not block releases forever.
   */
  private async endOverdueHolds(s: ControlState): Promise<void> {
    for (const h of overdueHolds(s.holds, this.volume, this.ports.clock.now())) {
      try {
        await commitControlEvent(this.ports.store, this.follower, this.identity(), () => ({
          type: "end_hold",
          holdId: h.holdId,
          reason: overdueReason(h),
        }));
        this.counters.inc(`hold_expired.${h.kind}`);
      } catch (err) {
        this.counters.inc(`hold_end_${err instanceof CustodyError ? err.code : "failed"}`);
      }
    }
  }

  /** Starts one repair task per pending declared failure (see FailureRepairRunner.start). Never throws. */
  startRepairs(): void {
    this.failureRepairs.start();
  }

  /** A repair child actor ended: its outcome is recorded (see FailureRepairRunner.settle). */
  settleRepair(outcome: RepairOutcome): Promise<void> {
    return this.failureRepairs.settle(outcome);
  }

  /** Every declared failure this controller has seen and what became of its repair, by sequence. */
  get repairs(): RepairStatus[] {
    return this.failureRepairs.records;
  }

  private publishFrontier(s: ControlState, obligationId: string, holder: string, lane: string): void {
    void obligationId; // the lane names it (obligationIdOf(volume, lane))
    const frontier = releaseFrontier(s, this.volume, holder, lane);
    if (frontier !== undefined) this.sendFrontier(frontier);
  }

  private sendFrontier(frontier: ReleaseFrontierMessage): void {
    this.ports.transport.publish(releaseSubject(frontier.holder), encodeMessage(releaseFrontierSpec, frontier));
  }

  /** Commits `body` (fenced, chained, optimistic). Throws ControlFenceError / ControlConflictError. */
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }> {
    return this.exclusive(async () => {
      // Another controller may commit concurrently: on a conflict the whole decision is re-run on
      // the refreshed state (never just re-sent), a bounded number of times.
      for (let attempt = 1; ; attempt++) {
        try {
          const r = await commitControlEvent(this.ports.store, this.follower, this.identity(), body);
          this.nudge();
          return r;
        } catch (err) {
          if (!(err instanceof ControlConflictError) || attempt >= 5) throw err;
          this.counters.inc("control_conflict_retry");
        }
      }
    });
  }

  /** A recovery or repair is reading `ranges` of `lane`: releases of them are refused until `endRecovery`. */
  beginRecovery(r: RecoveryInFlight): void {
    this.dispatch({ type: "recovery.begun", recovery: { ...r, ranges: r.ranges.toJSON() } });
  }

  endRecovery(id: string): void {
    this.dispatch({ type: "recovery.ended", id });
  }

  /** The newest evaluation report. */
  get report(): EvaluationReport | undefined {
    return this.lastReport;
  }
}
