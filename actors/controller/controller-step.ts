import { CustodyError, type TimerArm } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import {
  AdmissionError,
  AdmissionRefusal,
  checkAutoAdmission,
  readAdmissionRequest,
  ReceiptError,
  receiptBatchSpec,
  receiptVerifyContext,
  releasedRanges,
  type AdmissionRequest,
  type ControlState,
} from "../../custody/index.ts";
import {
  decodeAny,
  decodeMessage,
  obligationIdOf,
  parseSubjectOf,
  receiptSubject,
  type ReleaseFrontierMessage,
  type VolumeStatus,
  type WriterProgressMessage,
} from "../../transport/protocol/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { addCommitRuns, sightRetained, trimHistory, type HistoryBounds } from "./commit-history.ts";
import { count, type ControllerEffect } from "./controller-effects.ts";
import { admitLedgerIncarnation, applyReceiptBatch, type LedgerApplied, type RangePairs } from "./controller-ledger.ts";
import type { ControllerData, PlainRecovery } from "./controller-state.ts";
import type { BaseSnapshot, VerdictMemory } from "../../policies/index.ts";
import type { AuditEvent, ControllerTimer, RepairLaunch } from "./controller-ports.ts";
import { noteFencedSpeaker } from "./fenced-speakers.ts";
import { checkWriterProgress } from "./writer-progress-check.ts";
import { answerRequest, type RequestEvent } from "./controller-requests.ts";

/**
 * The controller's pure step: (data, event) → new data and the effects to run. No I/O, no clock
 * (time and the folded control log arrive in the events), never mutates its input. A refused input
 * returns the same data object, a count effect named by its error code, and that code as `refused`.
 */
export interface ControllerStep {
  readonly state: ControllerData;
  readonly effects: readonly ControllerEffect[];
  readonly refused?: string;
}

export type ControllerStepEvent =
  /** A signed receipt batch, with the control log as folded when it arrived. */
  | { type: "nats.receipt"; msg: InboundMessage; control: ControlState; nowMs: number }
  /** A message on the volume's event subject (writer progress is taken in, other kinds ignored). */
  | { type: "nats.event"; msg: InboundMessage }
  /** A holder's new incarnation asks to be admitted. */
  | { type: "nats.admit"; msg: InboundMessage; control: ControlState }
  | { type: "admission.committed"; key: string; control: ControlState }
  | { type: "admission.failed"; key: string; code: string }
  /** The control log was folded again (start, a round, a commit): admitted incarnations are noted. */
  | { type: "control.folded"; control: ControlState }
  /** Something outside the fold changed (a commit, a recovery, a base, a reconnect): evaluate again. */
  | { type: "nudge" }
  /** An evaluation round began: what changed so far is in it. */
  | { type: "round.started" }
  /** A round ended with its status document, which is kept and published. */
  | { type: "round.done"; status: VolumeStatus }
  /** Retained ranges seen at `nowMs` (what no commit run dates yet is dated by this sighting). */
  | { type: "sighted"; sightings: readonly { lane: string; ranges: RangePairs }[]; nowMs: number }
  /** A round's evaluation lets the commit history fold below these bounds. */
  | { type: "history.trim"; bounds: HistoryBounds }
  /** A round decided its releases (planReleases): the durable holders it knows now. */
  | { type: "releases.planned"; durable: readonly string[] }
  /** A granted release of `holder` was committed at `nowMs` (its next waits `releaseEveryMs`). */
  | { type: "release.committed"; holder: string; nowMs: number }
  /** A base snapshot became available (releases may go to it). */
  | { type: "base.added"; base: BaseSnapshot }
  /** A recovery or repair reads these ranges until `recovery.ended`: releases of them are refused. */
  | { type: "recovery.begun"; recovery: PlainRecovery }
  | { type: "recovery.ended"; id: string }
  /** A round's steady verdicts, remembered for the next (their grace). */
  | { type: "verdicts.noted"; memory: VerdictMemory }
  /** The transport's connection changed; after a reconnect what was published meanwhile is gone. */
  | { type: "connection"; change: string }
  | RequestEvent;

/** How the controller's working parts hand events to its machine. */
export type ControllerDispatch = (
  e:
    | Exclude<ControllerStepEvent, { type: "round.started" | "round.done" }>
    | TimerArm<ControllerTimer>
    | { type: "repair.launch"; launch: RepairLaunch }
    | AuditEvent,
) => void;

export function controllerStep(d: ControllerData, e: ControllerStepEvent): ControllerStep {
  switch (e.type) {
    case "nats.failover":
    case "failover.committed":
    case "failover.failed":
    case "nats.repair":
    case "repair.answered":
    case "repair.failed":
      return { state: d, ...answerRequest(d.volume, e) };
    case "nats.receipt":
      return foldReceipt(d, e.msg, e.control, e.nowMs);
    case "nats.event":
      return foldProgress(d, e.msg);
    case "nats.admit":
      return askAdmission(d, e.msg, e.control);
    case "admission.committed": {
      const after = noteAdmitted({ ...d, admitting: d.admitting.filter((k) => k !== e.key) }, e.control);
      return { state: after.state, effects: [count("admission_committed"), ...after.effects] };
    }
    case "admission.failed":
      return {
        state: { ...d, admitting: d.admitting.filter((k) => k !== e.key) },
        effects: [count(`admission_${e.code}`)],
      };
    case "control.folded":
      return foldedAgain(d, e.control);
    case "nudge":
      return { state: d.dirty ? d : { ...d, dirty: true }, effects: [] };
    case "round.started":
      return { state: d.dirty ? { ...d, dirty: false } : d, effects: [] };
    case "round.done":
      return { state: { ...d, status: e.status }, effects: [{ type: "publishStatus", status: e.status }] };
    case "sighted": {
      let history = d.history;
      for (const s of e.sightings) history = sightRetained(history, s.lane, RangeSet.fromJSON(s.ranges), e.nowMs);
      return { state: history === d.history ? d : { ...d, history }, effects: [] };
    }
    case "history.trim":
      return { state: { ...d, history: trimHistory(d.history, e.bounds) }, effects: [] };
    case "releases.planned":
      if (e.durable.length === d.releases.durable.length) return { state: d, effects: [] }; // it only grows
      return { state: { ...d, releases: { ...d.releases, durable: [...e.durable] } }, effects: [] };
    case "base.added":
      return changed(d, { bases: [...d.bases.filter((b) => b.id !== e.base.id), e.base] });
    case "recovery.begun":
      return changed(d, { recoveries: { ...d.recoveries, [e.recovery.id]: e.recovery } });
    case "recovery.ended": {
      const { [e.id]: _ended, ...recoveries } = d.recoveries;
      return changed(d, { recoveries });
    }
    case "verdicts.noted":
      return { state: { ...d, verdicts: e.memory }, effects: [] };
    case "connection": {
      const effects = [count(`connection_${e.change}`)];
      // Evaluate again and re-send every holder its release frontier at the next log read.
      if (e.change !== "reconnected") return { state: d, effects };
      return { state: { ...d, frontiersDue: true, dirty: true }, effects };
    }
    case "release.committed": {
      const lastReleaseAt = { ...d.releases.lastReleaseAt, [e.holder]: e.nowMs };
      return { state: { ...d, releases: { ...d.releases, lastReleaseAt } }, effects: [] };
    }
  }
}

/** `d` with `change`, and evaluated again at the next interval. */
const changed = (d: ControllerData, change: Partial<ControllerData>): ControllerStep => ({
  state: { ...d, ...change, dirty: true },
  effects: [],
});

/** The log was folded again: admitted incarnations noted, and every frontier re-sent when due. */
function foldedAgain(d: ControllerData, s: ControlState): ControllerStep {
  const noted = noteAdmitted(d, s);
  if (!noted.state.frontiersDue) return noted;
  return {
    state: { ...noted.state, frontiersDue: false },
    effects: [...noted.effects, ...allFrontiers(noted.state, s)],
  };
}

const codeOf = (err: unknown, otherwise: string): string => (err instanceof CustodyError ? err.code : otherwise);

/**
 * A signed receipt batch: verified against the folded control log (admitted keys, incarnation,
 * fence) and merged into the ledger; a refused batch is counted by code, a superseded incarnation
 * still speaking is noted (`fenced`), and the ledger is unchanged. Released ranges are subtracted
 * when the evaluation state is built, not refused here: a holder may keep claiming an authorized
 * range until its whole segment recycles.
 */
export function foldReceipt(d: ControllerData, msg: InboundMessage, s: ControlState, nowMs: number): ControllerStep {
  let applied: LedgerApplied;
  let verifying = false; // refusals of the ledger itself are also counted as `receipt.rejected.<code>`
  try {
    const { volume, lane } = parseSubjectOf("receipt", msg.subject);
    const signed = decodeMessage(receiptBatchSpec, msg.data);
    const ctx = {
      ...receiptVerifyContext(s, { volume, lane, subject: receiptSubject(volume, lane) }),
      released: () => RangeSet.EMPTY,
    };
    verifying = true;
    applied = applyReceiptBatch(d.ledger, signed, ctx);
  } catch (err) {
    const code = codeOf(err, "invalid");
    const effects = [count(`receipt_${code}`)];
    if (verifying) effects.unshift(count(`receipt.rejected.${err instanceof ReceiptError ? err.code : "internal"}`));
    const fenced = noteFencedSpeaker(d.fenced, err, nowMs);
    return { state: fenced === d.fenced ? d : { ...d, fenced }, effects, refused: code };
  }
  const effects = [count("receipt.accepted", applied.accepted)];
  // Replays and reorderings change nothing, but are counted so they can be seen.
  if (applied.superseded > 0) effects.push(count("receipt.superseded", applied.superseded));
  if (applied.duplicates > 0) effects.push(count("receipt.duplicate", applied.duplicates));
  effects.push(count("receipt_batches"));
  return { state: { ...d, ledger: applied.ledger, dirty: true }, effects };
}

/**
 * Writer progress on the volume's event subject (other event kinds are ignored); refused whole and
 * counted when it cannot be this volume's writer's (see writer-progress-check.ts).
 */
export function foldProgress(d: ControllerData, msg: InboundMessage): ControllerStep {
  let p: WriterProgressMessage;
  try {
    const decoded = decodeAny(msg.data);
    if (decoded.kind !== "writer-progress") return { state: d, effects: [] };
    p = decoded.body as WriterProgressMessage;
    checkWriterProgress(p, d.volume, d.lanes);
  } catch (err) {
    const code = codeOf(err, "malformed");
    return { state: d, effects: [count(code)], refused: code };
  }
  const heads: Record<string, number> = { ...d.heads };
  const runs = [];
  for (const l of p.lanes) {
    heads[l.lane] = Math.max(heads[l.lane] ?? 0, l.head);
    for (const [first, last, at, bytes] of l.runs)
      runs.push({ lane: l.lane, first, last, committedAtMs: at, bytesPerSeq: bytes });
  }
  return { state: { ...d, heads, history: addCommitRuns(d.history, runs), dirty: true }, effects: [] };
}

/**
 * A holder's new incarnation asks to be admitted. Under the key-continuity policy it is committed
 * when the log already admitted that holder with the same key and failure domain and the
 * incarnation is higher; anything else is counted (`admission_<code>`, or the refusal's code) and
 * left to an operator. Requests for holders outside the topology (or standby list) are ignored, and
 * so are those of standbys not yet enlisted (the repair launcher answers those).
 */
export function askAdmission(d: ControllerData, msg: InboundMessage, s: ControlState): ControllerStep {
  let req: AdmissionRequest;
  try {
    req = readAdmissionRequest(msg.data);
    const standby = d.standbys.includes(req.holderId);
    if (!d.holders.includes(req.holderId) && !standby) return { state: d, effects: [] };
    if (standby && s.holders[req.holderId] === undefined) return { state: d, effects: [] };
    checkAutoAdmission(s, req);
  } catch (err) {
    if (err instanceof AdmissionError && err.code === AdmissionRefusal.NotNewer)
      return { state: d, effects: [], refused: err.code };
    const code = codeOf(err, "admission_malformed");
    return { state: d, effects: [count(code)], refused: code };
  }
  const key = `${req.holderId}#${req.incarnation}`;
  if (d.admitting.includes(key)) return { state: d, effects: [] };
  return {
    state: { ...d, admitting: [...d.admitting, key] },
    effects: [{ type: "commitAdmission", key, request: req, data: msg.data }],
  };
}

/**
 * Notices holders whose admitted incarnation went up: what their previous incarnation claimed
 * stops counting at once (dropped from the ledger; its RAM is gone; coverage repair refills what
 * scenarios now lack), and the new incarnation is told its release frontier.
 */
export function noteAdmitted(d: ControllerData, s: ControlState): ControllerStep {
  let admitted = d.admitted;
  let ledger = d.ledger;
  let dirty = d.dirty;
  const effects: ControllerEffect[] = [];
  for (const h of Object.values(s.holders)) {
    const prev = admitted[h.holderId];
    if (prev !== undefined && prev >= h.incarnation) continue;
    admitted = { ...admitted, [h.holderId]: h.incarnation };
    ledger = admitLedgerIncarnation(ledger, h.holderId, h.incarnation);
    if (prev === undefined) continue;
    effects.push(count("incarnation_admitted"));
    dirty = true;
    for (const lane of d.lanes) effects.push(...frontierEffects(s, d.volume, h.holderId, lane));
  }
  if (admitted === d.admitted) return { state: d, effects };
  return { state: { ...d, admitted, ledger, dirty }, effects };
}

/** Every holder of the log is told its release frontier of every lane (after a reconnect). Pure. */
export function allFrontiers(d: ControllerData, s: ControlState): ControllerEffect[] {
  return Object.keys(s.holders).flatMap((h) => d.lanes.flatMap((lane) => frontierEffects(s, d.volume, h, lane)));
}

/**
 * The release frontier of `holder` on `lane` as the log `s` states it, to publish — none to a
 * holder that never answered for the lane (one serving only a derived lane would refuse it as
 * unknown_lane). Pure.
 */
export function frontierEffects(s: ControlState, volume: string, holder: string, lane: string): ControllerEffect[] {
  const frontier = releaseFrontier(s, volume, holder, lane);
  return frontier === undefined ? [] : [{ type: "publishFrontier", frontier }];
}

export function releaseFrontier(
  s: ControlState,
  volume: string,
  holder: string,
  lane: string,
): ReleaseFrontierMessage | undefined {
  const obligationId = obligationIdOf(volume, lane);
  const o = s.obligations[obligationId];
  if (o !== undefined && o.responsible[holder] === undefined && o.released[holder] === undefined) return undefined;
  return {
    holder,
    volume,
    lane,
    ranges: releasedRanges(s, obligationId, holder).toJSON(),
    epoch: s.topologyEpoch,
    controlSeq: s.lastSeq,
  };
}
