import { unitRecordBytes } from "../../arena/index.ts";
import { CustodyError } from "../../core/index.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import {
  closeGrantor,
  grantorAnnounce,
  grantorArrival,
  grantorKnows,
  grantorRegrant,
  grantorRequest,
  grantorTopUp,
  grantSubject,
  initialGrantorLane,
  type CreditHeaders,
  type GrantorLane,
} from "../hop/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { readUnitMessage, senderOf, type InboundUnit, type UnitSubjectMessage } from "../../transport/index.ts";
import { openPayload, WireError, type WireCredit } from "../../transport/protocol/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";
import {
  ReplicaRefusal,
  type ApplyOp,
  type ReplicaEffect,
  type ReplicaStepEvent,
  type VolumeWrite,
} from "./replica-effects.ts";
import type { BarrierWaiter, ReplicaState } from "./replica-state.ts";

/**
 * The replica consumer's per-message logic as a pure function (issue #48): the state and one event
 * in, the new state and the effects to run out. No I/O, no clock; the input state is never
 * mutated. Bad input is counted by its typed code and changes nothing but the credit figures the
 * protocol says it consumes.
 */

export interface ReplicaStepResult {
  readonly state: ReplicaState;
  readonly effects: readonly ReplicaEffect[];
}

const count = (name: string): ReplicaEffect => ({ type: "count", name });
const publish = (g: GrantorLane, grant: WireCredit): ReplicaEffect => ({
  type: "publishGrant",
  subject: grantSubject(g),
  grant,
});

export function replicaStep(state: ReplicaState, event: ReplicaStepEvent): ReplicaStepResult {
  switch (event.type) {
    case "started":
      return onStarted(state, event.incarnation, event.flushedLsn);
    case "nats.message":
      return onMessage(state, event.lane, event.msg);
    case "apply":
      return onApplyRequest(state, event.id, event.ops);
    case "barrier":
      return onBarrier(state, { kind: "caller", id: event.id });
    case "applied":
      return onApplied(state, event.throughLsn, event.id);
    case "applyFailed":
      return onVolumeFailed(state, event.message, event.id);
    case "persisted":
      return onPersisted(state, event.seq, event.lsn);
    case "persistFailed":
      return onPersistFailed(state, event.seq, event.message);
    case "stop":
      return onStop(state);
  }
}

/** Started: the persisted position is where the replica stands; each lane announces this incarnation. */
function onStarted(state: ReplicaState, incarnation: number, flushedLsn: number): ReplicaStepResult {
  const { replicaId: holder, volume, upstream: senders, maxOutstandingCredit: maxOutstanding } = state.settings;
  const lanes: Record<string, GrantorLane> = {};
  const effects: ReplicaEffect[] = [];
  for (const lane of state.settings.lanes) {
    const g = initialGrantorLane({ holder, incarnation, volume, lane, senders, maxOutstanding });
    lanes[lane] = g;
    for (const grant of grantorAnnounce(g)) effects.push(publish(g, grant));
  }
  const lsn = { queuedLsn: flushedLsn, appliedLsn: flushedLsn, flushedLsn };
  return { state: { ...state, incarnation, lanes, ...lsn }, effects };
}

/** One message on a lane's unit subject. */
function onMessage(state: ReplicaState, lane: string, msg: InboundMessage): ReplicaStepResult {
  const g = state.lanes[lane];
  if (g === undefined) return { state, effects: [count("unknown_lane")] };
  const head = senderOf(msg.headers);
  let read: UnitSubjectMessage;
  try {
    read = readUnitMessage(msg, head.sentThrough);
  } catch (err) {
    return { state, effects: [count(err instanceof WireError ? err.code : "malformed")] };
  }
  if (read.kind === "other" && read.name === "replica-barrier") {
    const targetLsn = (read.body as { targetLsn: number }).targetLsn;
    return onBarrier(state, { kind: "wire", subject: msg.subject, reply: msg.reply, targetLsn });
  }
  const sender = head.sender;
  if (sender === undefined || !grantorKnows(g, sender)) return { state, effects: [count("unknown_sender")] };
  if (read.kind === "credit-request") {
    const r = grantorRequest(g, sender, head);
    return { state: withLane(state, lane, r.lane), effects: r.grant === undefined ? [] : [publish(r.lane, r.grant)] };
  }
  if (read.kind !== "units") return { state, effects: [count("unexpected_kind")] };
  return onUnits(state, lane, sender, head, read.units);
}

function withLane(state: ReplicaState, lane: string, g: GrantorLane): ReplicaState {
  return g === state.lanes[lane] ? state : { ...state, lanes: { ...state.lanes, [lane]: g } };
}

/**
 * The units of one message: each accounts its credit (an undecodable one too), then is checked and
 * opened; the records of the good ones go to the volume in one apply, the bad ones are counted by
 * their code. Then the sender is topped up (or re-sent its current grant when a unit came under a
 * stale window).
 */
function onUnits(
  state: ReplicaState,
  lane: string,
  sender: string,
  head: CreditHeaders,
  units: readonly InboundUnit[],
): ReplicaStepResult {
  let g = state.lanes[lane]!;
  let republish = false;
  const effects: ReplicaEffect[] = [];
  const ops: ApplyOp[] = [];
  for (const arrived of units) {
    try {
      const u = arrived.unit as TransportUnit | undefined;
      const r = grantorArrival(g, sender, u === undefined ? 0 : unitRecordBytes(u), {
        ...head,
        sentThrough: arrived.sentThrough,
      });
      g = r.lane;
      republish ||= r.republish;
      if (r.verdict.kind === "refused")
        throw new CustodyError(r.verdict.code, "unit was not sent under this replica's credit window", {});
      if (u === undefined) throw arrived.error;
      for (const rec of openUnit(state, lane, u))
        ops.push({ kind: "record", lsn: rec.lsn, lba: rec.lba, data: rec.data });
    } catch (err) {
      effects.push(count(err instanceof CustodyError ? err.code : "invalid_unit")); // WireError is a CustodyError
    }
  }
  const top = republish ? grantorRegrant(g, sender) : grantorTopUp(g, sender);
  if (top.grant !== undefined) effects.push(publish(top.lane, top.grant));
  const applied = applyOps(withLane(state, lane, top.lane), ops);
  return { state: applied.state, effects: [...effects, ...applied.effects] };
}

/** Checks a credited unit (shape, lane, term) and opens its records; throws a CustodyError naming what is wrong. */
function openUnit(state: ReplicaState, lane: string, u: TransportUnit) {
  validateTransportUnit(u);
  if (u.volume !== state.settings.volume || u.lane !== lane)
    throw new CustodyError("wrong_lane", "unit belongs to another lane", {});
  if (u.term < state.settings.term)
    throw new CustodyError("stale_term", "unit comes from a stale writer term", { term: u.term });
  return openPayload(state.settings.dataKey, u, u.payload);
}

/**
 * Plans `ops` against everything already handed to the volume: a record at or below it is a
 * duplicate (counted, skipped), a piece of an applied write is skipped, snapshot blocks move the
 * replica to their LSN. Emits one apply of what remains (always when a caller waits on it).
 */
function applyOps(state: ReplicaState, ops: readonly ApplyOp[], id?: number): ReplicaStepResult {
  let queuedLsn = state.queuedLsn;
  const writes: VolumeWrite[] = [];
  const effects: ReplicaEffect[] = [];
  for (const op of ops) {
    if (op.kind === "blocks") {
      for (const b of op.blocks) writes.push({ lba: b.lba, data: b.data ?? new Uint8Array(BLOCK_SIZE) });
      queuedLsn = Math.max(queuedLsn, op.asOfLsn);
    } else if (op.lsn <= queuedLsn) {
      if (op.kind === "record") effects.push(count("duplicate_record"));
    } else {
      writes.push({ lba: op.lba, data: op.data });
      if (op.kind === "record") queuedLsn = op.lsn;
    }
  }
  if (writes.length > 0 || id !== undefined)
    effects.push({ type: "apply", writes, throughLsn: queuedLsn, ...(id === undefined ? {} : { id }) });
  return { state: queuedLsn === state.queuedLsn ? state : { ...state, queuedLsn }, effects };
}

function onApplyRequest(state: ReplicaState, id: number, ops: readonly ApplyOp[]): ReplicaStepResult {
  return applyOps(state, ops, id);
}

function onApplied(state: ReplicaState, throughLsn: number, id: number | undefined): ReplicaStepResult {
  const next = throughLsn > state.appliedLsn ? { ...state, appliedLsn: throughLsn } : state;
  return { state: next, effects: id === undefined ? [] : [{ type: "reply", id, value: throughLsn }] };
}

/** A write failed: the executor applies and persists nothing after it; the caller (if any) is refused. */
function onVolumeFailed(state: ReplicaState, message: string, id: number | undefined): ReplicaStepResult {
  const effects: ReplicaEffect[] = [count("replica_apply_failed")];
  if (id !== undefined) effects.push({ type: "refuse", id, code: ReplicaRefusal.VolumeFailed, message });
  return { state, effects };
}

/**
 * Barrier: once everything handed to the volume so far is written, sync the volume, then persist
 * that LSN as the flushed position; the waiter is answered when the position is durable.
 */
function onBarrier(state: ReplicaState, waiter: BarrierWaiter): ReplicaStepResult {
  const seq = state.nextBarrierSeq;
  return {
    state: { ...state, nextBarrierSeq: seq + 1, barriers: [...state.barriers, { seq, waiter }] },
    effects: [{ type: "syncVolume" }, { type: "persistPosition", seq, lsn: state.queuedLsn }],
  };
}

function takeBarrier(state: ReplicaState, seq: number): { state: ReplicaState; waiter?: BarrierWaiter } {
  const at = state.barriers.findIndex((b) => b.seq === seq);
  if (at === -1) return { state };
  return {
    state: { ...state, barriers: state.barriers.filter((_, i) => i !== at) },
    waiter: state.barriers[at]!.waiter,
  };
}

function onPersisted(state: ReplicaState, seq: number, lsn: number): ReplicaStepResult {
  const taken = takeBarrier(state, seq);
  const next = { ...taken.state, flushedLsn: lsn };
  const w = taken.waiter;
  if (w === undefined) return { state: next, effects: [] };
  if (w.kind === "caller") return { state: next, effects: [{ type: "reply", id: w.id, value: lsn }] };
  const reached = lsn >= w.targetLsn;
  return { state: next, effects: [{ type: "respond", subject: w.subject, reply: w.reply, flushedLsn: lsn, reached }] };
}

/** A barrier whose sync or position write failed: nothing became durable; a wire request gets no answer. */
function onPersistFailed(state: ReplicaState, seq: number, message: string): ReplicaStepResult {
  const taken = takeBarrier(state, seq);
  const effects: ReplicaEffect[] = [count("replica_barrier_failed")];
  const w = taken.waiter;
  if (w?.kind === "caller") effects.push({ type: "refuse", id: w.id, code: ReplicaRefusal.VolumeFailed, message });
  return { state: taken.state, effects };
}

/** Stop: no new credit is promised; barrier callers still waiting are refused; the subscriptions end. */
function onStop(state: ReplicaState): ReplicaStepResult {
  const lanes = Object.fromEntries(Object.entries(state.lanes).map(([k, g]) => [k, closeGrantor(g)]));
  const effects: ReplicaEffect[] = [];
  for (const b of state.barriers)
    if (b.waiter.kind === "caller")
      effects.push({ type: "refuse", id: b.waiter.id, code: ReplicaRefusal.Stopped, message: "the replica stopped" });
  effects.push({ type: "close" });
  return { state: { ...state, lanes, barriers: [] }, effects };
}
