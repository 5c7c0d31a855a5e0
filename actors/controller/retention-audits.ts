import { trace, type Tracer } from "@opentelemetry/api";
import type { Clock, Counters, Random } from "../../core/index.ts";
import { CustodyError, cryptoRandom } from "../../core/index.ts";
import { RangeSet, validateTransportUnit } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { HolderStatus, type ControlState, type ReceiptLedger } from "../../custody/index.ts";
import {
  AuditBook,
  AuditBudget,
  AuditOutcome,
  auditVerdict,
  planAudit,
  type AuditPlan,
  type HolderAuditRecord,
} from "../../policies/index.ts";
import { auditSubject, decodeMessage, encodeMessage } from "../../transport/protocol/index.ts";
import type { Transport, TransportSubscription } from "../../transport/index.ts";
import { fetchUnits } from "../repair/index.ts";
import { retentionAnswerSpec, retentionChallengeSpec } from "../../transport/protocol/index.ts";
import type { ControllerConfig, RetentionAuditConfig } from "./controller-config.ts";
import type { AuditEvent, ControllerPorts } from "./controller-ports.ts";

/**
 * Retention audits run by the controller (docs/custody.md, "Retention audits"). Every `everyMs`
 * each active holder that claims raw units of the volume gets one challenge: a fresh nonce and a
 * few sampled sequences it claims, on `custody.v1.audit.<holder>`. At the same time the same units
 * are fetched from a different holder that claims them (the reference). The holder's keyed digest
 * is checked against the digest recomputed from the reference's bytes (policies/audit-verdict.ts).
 * A wrong or missing answer makes the holder unproven: the controller leaves its receipts out of
 * evaluation until a later audit passes. Cost is bounded by the period's byte budget.
 */

/** What the audits need of the controller. */
export interface RetentionAuditDeps {
  readonly config: RetentionAuditConfig;
  readonly volume: string;
  /** Holders whose receipts may count (the topology's). */
  readonly holders: readonly string[];
  readonly transport: Transport;
  readonly clock: Clock;
  readonly counters: Counters;
  readonly random: Random;
  /** The controller's verified holdings. */
  readonly ledger: Pick<ReceiptLedger, "holdings">;
  readonly controlState: () => ControlState;
  readonly dispatch: (e: AuditEvent) => void;
  /** Asks for an evaluation round (a holder's audit state changed). */
  readonly nudge: () => void;
  readonly tracer?: Tracer;
}

/** The controller's retention audits of one volume. */
export class RetentionAudits {
  readonly book = new AuditBook();
  private readonly budget: AuditBudget;
  private readonly inFlight = new Set<string>();
  private readonly tracer: Tracer;

  constructor(private readonly deps: RetentionAuditDeps) {
    this.budget = new AuditBudget(deps.config.maxBytesPerPeriod, deps.config.periodMs);
    this.tracer = deps.tracer ?? trace.getTracer("custody.controller");
  }

  /** Starts the audit cadence: the machine raises `timer.audit` after `everyMs`, and again after each round. */
  start(): void {
    this.deps.dispatch({ type: "timer.arm", ms: this.everyMs, event: { type: "timer.audit" } });
  }

  /** The time between two rounds. */
  get everyMs(): number {
    return this.deps.config.everyMs;
  }

  /** Holders whose evidence is unproven now (their latest judged audit failed or timed out). */
  unproven(): ReadonlySet<string> {
    return this.book.unproven();
  }

  /** True when `holder`'s latest judged audit failed or timed out. */
  isUnproven(holder: string): boolean {
    return this.book.isUnproven(holder);
  }

  /** Every topology holder's audit record, for the status document. */
  rows(): HolderAuditRecord[] {
    return this.book.rows(this.deps.holders);
  }

  /**
   * Per lane, what each active holder's admitted incarnation claims of raw units (released ranges already subtracted).
   */
  private claims(): Map<string, Map<string, RangeSet>> {
    const s = this.deps.controlState();
    const out = new Map<string, Map<string, RangeSet>>();
    for (const h of this.deps.ledger.holdings({ volume: this.deps.volume })) {
      const held = s.holders[h.holderId];
      if (
        held?.status !== HolderStatus.active ||
        held.incarnation !== h.incarnation ||
        h.representation !== "raw" ||
        !this.deps.holders.includes(h.holderId)
      )
        continue;
      const gone = s.obligations[h.obligationId]?.released[h.holderId];
      const retained = gone ? h.retained.subtract(gone) : h.retained;
      const lane = out.get(h.lane) ?? new Map<string, RangeSet>();
      lane.set(h.holderId, (lane.get(h.holderId) ?? RangeSet.EMPTY).union(retained));
      out.set(h.lane, lane);
    }
    return out;
  }

  /** One round: a challenge for every holder not already being audited, while the byte budget allows. */
  round(): void {
    const claims = this.claims();
    const unproven = this.unproven();
    for (const holder of this.deps.random.shuffle(this.deps.holders)) {
      if (this.inFlight.has(holder)) continue;
      const lanes = [...claims.entries()]
        .filter(([, c]) => !(c.get(holder)?.isEmpty ?? true))
        .map(([lane]) => lane)
        .sort();
      if (lanes.length === 0) continue;
      if (!this.budget.allows(this.deps.clock.now())) {
        this.deps.counters.inc("audit_skipped_budget");
        return;
      }
      const lane = this.deps.random.pick(lanes);
      const plan = planAudit(holder, claims.get(lane)!, unproven, this.deps.config.unitsPerChallenge, this.deps.random);
      if (plan === undefined || plan.seqs.isEmpty) {
        this.deps.counters.inc("audit_no_reference");
        continue;
      }
      this.inFlight.add(holder);
      void this.challenge(plan, lane).finally(() => this.inFlight.delete(holder));
    }
  }

  /** Challenges one holder and fetches the reference copy at once; the verdict comes back as an event. */
  private async challenge(plan: AuditPlan, lane: string): Promise<void> {
    const { transport, clock, config, volume } = this.deps;
    const span = this.tracer.startSpan("controller.retention_audit", {
      attributes: {
        "custody.holder": plan.holder,
        "custody.reference": plan.reference,
        "custody.lane": lane,
        "custody.seqs": plan.seqs.toString(),
      },
    });
    const nonce = this.deps.random.bytes(32);
    const request = encodeMessage(retentionChallengeSpec, {
      holder: plan.holder,
      volume,
      lane,
      nonce,
      seqs: plan.seqs.toJSON(),
    });
    const [reply, reference] = await Promise.all([
      transport
        .request(auditSubject(plan.holder), request, { timeoutMs: config.answerTimeoutMs })
        .catch(() => undefined),
      fetchUnits(transport, plan.reference, volume, lane, plan.seqs, config.answerTimeoutMs, { clock }).then(
        (units) => units.map((u) => validateTransportUnit(u) as TransportUnit),
        () => undefined,
      ),
    ]);
    const bytesRead = (reference ?? []).reduce((n, u) => n + u.payload.byteLength, 0);
    const cpu = process.cpuUsage();
    let outcome: AuditOutcome;
    let reason: string | undefined;
    if (reference === undefined) {
      this.deps.counters.inc("audit_reference_failed");
      [outcome, reason] = [AuditOutcome.Void, `reference ${plan.reference} did not serve the units`];
    } else {
      let answer;
      let malformed = false;
      try {
        const a = reply === undefined ? undefined : decodeMessage(retentionAnswerSpec, reply.data);
        if (a !== undefined && (a.holder !== plan.holder || Buffer.compare(a.nonce, nonce) !== 0))
          throw new Error("answer is not for this challenge");
        answer = a === undefined ? undefined : { digest: a.digest, covered: RangeSet.fromJSON(a.covered) };
      } catch {
        malformed = true;
      }
      const stillClaimed = this.claims().get(lane)?.get(plan.holder) ?? RangeSet.EMPTY;
      const v = malformed
        ? { outcome: AuditOutcome.Failed, reason: "malformed answer" }
        : auditVerdict({ nonce, challenged: plan.seqs, answer, referenceUnits: reference, stillClaimed });
      [outcome, reason] = [v.outcome, v.reason];
    }
    const used = process.cpuUsage(cpu);
    span.setAttribute("custody.audit_outcome", outcome);
    if (reason !== undefined) span.setAttribute("custody.audit_reason", reason);
    span.end();
    this.deps.dispatch({
      type: "audit.judged",
      holder: plan.holder,
      outcome,
      reason,
      atMs: clock.now(),
      bytesRead,
      cpuMicros: used.user + used.system,
    });
  }

  /** Folds a finished audit: counted, recorded, and a new evaluation when the holder's state changed. */
  judged(e: Extract<AuditEvent, { type: "audit.judged" }>): void {
    this.budget.spend(e.bytesRead, e.atMs);
    this.deps.counters.inc(`audit_${e.outcome}`);
    this.deps.counters.inc("audit_bytes_read", e.bytesRead);
    this.deps.counters.inc("audit_cpu_us", e.cpuMicros);
    if (this.book.record(e.holder, e.outcome, e.atMs)) this.deps.nudge();
  }
}

/** A retention-audit configuration the controller refuses (code `invalid_retention_audit`; `detail.field` names it). */
export class RetentionAuditConfigError extends CustodyError {
  constructor(field: string, value: unknown) {
    super(
      "invalid_retention_audit",
      `retentionAudit.${field} must be a positive integer, got ${JSON.stringify(value)}`,
      { field: `retentionAudit.${field}`, value },
    );
  }
}

/**
 * Returns `c` when every field is a positive safe integer (a zero cadence would spin); throws RetentionAuditConfigError
 * otherwise. Pure.
 */
export function checkRetentionAuditConfig(c: RetentionAuditConfig): RetentionAuditConfig {
  for (const field of ["everyMs", "unitsPerChallenge", "answerTimeoutMs", "maxBytesPerPeriod", "periodMs"] as const) {
    const v: unknown = (c as unknown as Record<string, unknown>)[field];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) throw new RetentionAuditConfigError(field, v);
  }
  return c;
}

/**
 * The controller's audits of its volume when `config.retentionAudit` is set (undefined otherwise),
 * with their cadence started; the returned handle in `subs` stops it with the controller.
 */
export function startRetentionAudits(
  config: ControllerConfig,
  ports: ControllerPorts,
  core: Pick<RetentionAuditDeps, "counters" | "ledger" | "controlState" | "dispatch" | "nudge">,
  subs: TransportSubscription[],
): RetentionAudits | undefined {
  if (config.retentionAudit === undefined) return undefined;
  const audits = new RetentionAudits({
    ...core,
    config: checkRetentionAuditConfig(config.retentionAudit),
    volume: config.topology.volume,
    holders: Object.keys(config.topology.holderSites),
    transport: ports.transport,
    clock: ports.clock,
    random: cryptoRandom(),
  });
  audits.start();
  return audits;
}
