import {
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  trace,
  type Link,
  type Span,
  type SpanContext,
} from "@opentelemetry/api";
import { unitRecordBytes } from "../../arena/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import type { CreditHeaders, CreditRefusal } from "../hop/index.ts";
import { startConsumerSpan, injectTraceContext } from "../../transport/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import {
  attestationTokens,
  readUnitMessage,
  senderOf,
  type InboundUnit,
  type UnitSubjectMessage,
} from "../../transport/index.ts";
import { WireError } from "../../transport/protocol/index.ts";
import { noteSent } from "../hop/index.ts";
import type { HolderContext } from "./holder-context.ts";
import type { HolderLane } from "./holder-lane.ts";
import type { LaneAdmission } from "./lane-admission.ts";
import { HolderRejectCode, type HolderInbound, type HolderTimer } from "./holder-ports.ts";
import { authenticateUnits } from "./unit-authentication.ts";
import { keepManifest } from "./manifest-keeping.ts";
import { laneManifestSpec, type LaneManifestMessage } from "../../transport/protocol/index.ts";

/**
 * The `holder.admit` span attribute saying what became of the unit: `stored`, `duplicate` (already
 * held), `replayed` (no credit backs it) or `refused` (with `custody.rejected` naming why).
 */
const ADMIT_OUTCOME = "custody.outcome";

/** What ingress may do besides the context. */
export interface IngressActions {
  /** Notes an admitted (or re-announced) unit for the lane's next receipt batch. */
  noteForReceipt(key: string, link?: Link): void;
  /** Schedules an event back to the actor (a new segment's seal timer). */
  later(ms: number, e: HolderTimer): void;
  /** True while the holder grants credit (serving or degraded); false once draining. */
  granting(): boolean;
}

/**
 * One message on `custody.v1.unit.<me>.<volume>.<lane>`: a unit, a frame of units, or a credit
 * request. Where the holder knows its volumes' writer keys, each unit must first be listed by a
 * writer attestation the message names (else a typed refusal, before anything is admitted or
 * receipted). Each unit is credited, validated (size, digest, term, overlap), stored, forwarded to
 * every edge at once and noted for the next receipt. Any refusal is typed, counted, and changes
 * no custody state; one bad unit in a frame costs the other units nothing.
 */
export function handleUnitMessage(h: HolderContext, act: IngressActions, key: string, msg: InboundMessage): void {
  const hl = h.lanes.get(key);
  if (hl === undefined) return;
  const head = senderOf(msg.headers);
  const sender = head.sender;
  if (sender === undefined || !hl.grantor.knows(sender)) return h.reject(HolderRejectCode.UnknownSender, key);
  let read: UnitSubjectMessage;
  try {
    read = readUnitMessage(msg, head.sentThrough);
  } catch (err) {
    // Unreadable: still account the sender's stated total so its credit is not leaked.
    account(hl, sender, 0, head, false);
    return h.reject(err instanceof WireError ? err.code : "malformed", key);
  }
  if (read.kind === "credit-request") {
    hl.forfeit(hl.grantor.onRequest(sender, head));
    hl.forfeit(hl.grantor.takeForfeited());
    return;
  }
  if (read.kind === "other" && read.name === laneManifestSpec.kind) {
    if (keepManifest(h, key, hl, read.body as LaneManifestMessage, msg.data)) act.noteForReceipt(key);
    return;
  }
  if (read.kind !== "units") return h.reject(HolderRejectCode.UnexpectedKind, key);
  const verdicts = authenticateUnits(h.ports.writerKeys, attestationTokens(msg.headers), read.units);
  // Credit every unit first, then store the frame's credited units with one request to the lane's
  // actor, then finish each unit in frame order (refusals, receipts and forwards keep that order).
  const steps: AdmissionStep[] = [];
  const offered: CreditedUnit[] = [];
  // One credit figure object per frame, its sent-through figure set per unit (the grantor keeps none).
  const credits = { ...head };
  for (let i = 0; i < read.units.length; i++) {
    const u = read.units[i]!;
    const auth = verdicts?.[i];
    credits.sentThrough = u.sentThrough;
    if (u.unit === undefined) {
      account(hl, sender, 0, credits, false);
      steps.push({ refused: u.error?.code ?? "malformed" });
    } else if (auth !== undefined && !auth.ok) {
      // Not the writer's, so its credit figures are not believed either: nothing is accounted
      // (a genuine unit refused here counts as lost on the wire; the next figure covers it).
      steps.push({ refused: auth.code });
    } else {
      const step = creditUnit(h, hl, sender, u.unit, u, msg.subject, credits, auth?.token);
      if ("unit" in step) offered.push(step);
      steps.push(step);
    }
  }
  let admissions: LaneAdmission[] = [];
  try {
    if (offered.length > 0) admissions = hl.admitMany(offered);
  } catch (err) {
    for (const step of steps) if ("span" in step) step.span.end();
    throw err;
  }
  let next = 0;
  for (const step of steps) {
    if ("refused" in step) h.reject(step.refused, key);
    else if ("unit" in step) finishUnit(h, act, key, hl, sender, step, admissions[next++]!);
    else {
      act.noteForReceipt(key);
      h.reject("replayed_unit", key);
    }
  }
}

/**
 * What ingress does with one unit of a frame: refuse it, note a replayed one for the next receipt and refuse it, or
 * store it.
 */
type AdmissionStep = { readonly refused: string } | { readonly replayed: true } | CreditedUnit;

interface CreditedUnit {
  readonly unit: TransportUnit;
  readonly arrived: InboundUnit;
  readonly bytes: number;
  readonly attestation: string | undefined;
  readonly span: Span;
}

/** Credit accounting and the holder's own checks of one decoded unit (see `handleUnitMessage`). */
function creditUnit(
  h: HolderContext,
  hl: HolderLane,
  sender: string,
  unit: TransportUnit,
  arrived: InboundUnit,
  subject: string,
  credits: CreditHeaders,
  attestation: string | undefined,
): AdmissionStep {
  const span = startConsumerSpan(h.tracer, "holder.admit", { subject, headers: arrived.headers });
  // The unit's range whatever becomes of it: a trace of a re-sent or refused unit still names it.
  if (span.isRecording())
    span.setAttributes({
      "custody.volume": unit.volume,
      "custody.lane": unit.lane,
      "custody.first_seq": unit.firstSeq,
      "custody.last_seq": unit.lastSeq,
    });
  let step: AdmissionStep | undefined;
  try {
    const bytes = unitRecordBytes(unit);
    const credit = account(hl, sender, bytes, credits, true);
    if (credit === "exceeded") step = { refused: "credit_exceeded" };
    // Credited by another window (a restart on either side): not ours to store; the sender
    // re-sends it under the window our reply names.
    else if (credit !== "ok" && credit !== "replayed") step = { refused: credit };
    // No credit backs it. A duplicate changes nothing; a late unit presumed lost is refused and
    // will be re-forwarded by the sender once our receipts show the hole.
    else if (credit === "replayed") step = { replayed: true };
    else {
      const misfit =
        unit.volume !== hl.volume || unit.lane !== hl.lane
          ? "wrong_lane"
          : bytes > hl.arena.config.maxUnitBytes
            ? "unit_too_large"
            : undefined;
      if (misfit !== undefined) {
        hl.forfeit(bytes);
        step = { refused: misfit };
      } else step = { unit, arrived, bytes, attestation, span };
    }
    return step;
  } finally {
    // A unit that is not stored ends its span here; a stored one ends it once finished.
    if (step === undefined || !("unit" in step)) {
      if (step !== undefined)
        span.setAttributes(
          "refused" in step
            ? { [ADMIT_OUTCOME]: "refused", "custody.rejected": step.refused }
            : { [ADMIT_OUTCOME]: "replayed" },
        );
      span.end();
    }
  }
}

/**
 * What follows the lane actor's verdict on a credited unit: it validated (digest), classified
 * (term, overlap, duplicate) and stored it with its writer attestation, which then lives as long
 * as the unit is held.
 */
function finishUnit(
  h: HolderContext,
  act: IngressActions,
  key: string,
  hl: HolderLane,
  sender: string,
  c: CreditedUnit,
  admitted: LaneAdmission,
): void {
  const { unit, span, bytes, attestation } = c;
  try {
    if (admitted.kind === "refused") {
      // Refused before anything changed; the sender still holds the unit unreceipted.
      hl.forfeit(bytes);
      span.setAttributes({ [ADMIT_OUTCOME]: "refused", "custody.rejected": admitted.code });
      if (!admitted.counted) return h.reject(admitted.code, key);
      return h.observe({ type: "rejected", lane: key, code: admitted.code });
    }
    if (admitted.kind === "duplicate") {
      span.setAttribute(ADMIT_OUTCOME, "duplicate");
      hl.forfeit(bytes);
      h.counters.inc("duplicate_unit");
      // The sender may have lost our receipt: re-announce soon.
      act.noteForReceipt(key);
      return;
    }
    if (admitted.opened) act.later(h.config.arena.maxOpenDelayMs, { type: "timer.seal", lane: key });
    if (h.ports.preserved !== undefined) h.ports.preserved.keep(unit, attestation);
    span.setAttribute(ADMIT_OUTCOME, "stored");
    if (h.ports.observe) h.observe({ type: "admitted", lane: key, first: unit.firstSeq, last: unit.lastSeq });
    const context = span.spanContext();
    forward(h, hl, unit, c.arrived.data, bytes, context, attestation);
    // Without a recording tracer there is nothing to link a receipt to.
    act.noteForReceipt(key, isSpanContextValid(context) ? { context } : undefined);
    if (act.granting()) hl.grantor.topUp(sender);
  } finally {
    span.end();
  }
}

/** Credit accounting of one arrival (nothing changes when it is exceeded). */
function account(
  hl: HolderLane,
  sender: string,
  bytes: number,
  credits: CreditHeaders,
  storing: boolean,
): "ok" | "exceeded" | "replayed" | CreditRefusal {
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
function forward(
  h: HolderContext,
  hl: HolderLane,
  unit: TransportUnit,
  data: Uint8Array,
  bytes: number,
  parent: SpanContext,
  attestation: string | undefined,
): void {
  if (hl.edges.size === 0) return;
  const now = h.ports.clock.now();
  for (const edge of hl.edges.keys()) noteSent(hl, edge, unit.firstSeq, unit.lastSeq, now);
  if (!isSpanContextValid(parent)) {
    // Nothing records spans: no forward span and no trace context to carry.
    for (const s of hl.edges.values()) s.send({ data, bytes, attestation });
    return;
  }
  const ctx = trace.setSpanContext(ROOT_CONTEXT, parent);
  for (const [edge, s] of hl.edges) {
    const span = h.tracer.startSpan(
      "holder.forward",
      { kind: SpanKind.PRODUCER, attributes: { "custody.edge": edge } },
      ctx,
    );
    const headers = injectTraceContext({}, trace.setSpan(ROOT_CONTEXT, span));
    s.send({ data, bytes, headers, attestation, onSent: () => span.end() });
  }
}
