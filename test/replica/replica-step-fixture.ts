/**
 * Inputs for the replica's pure step, built without NATS, files or a clock: sealed units as the
 * writer sends them, with the credit headers a sender sets, and deep-frozen states.
 */
import { randomBytes } from "node:crypto";
import { replicaBarrierSpec } from "../../actors/replica/replica-messages.ts";
import type { ReplicaEffect, ReplicaStepEvent } from "../../actors/replica/replica-effects.ts";
import { initialReplicaState, type ReplicaState } from "../../actors/replica/replica-state.ts";
import { replicaStep } from "../../actors/replica/replica-step.ts";
import { makeTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import type { InboundMessage } from "../../transport/transport.ts";
import {
  CREDIT_WINDOW_HEADER,
  creditWindowTag,
  SENDER_HEADER,
  SENT_THROUGH_HEADER,
  SESSION_HEADER,
} from "../../transport/unit-frames.ts";
import { creditRequestSpec, unitSpec } from "../../transport/protocol/wire/messages.ts";
import { encodeMessage } from "../../transport/protocol/wire/index.ts";
import { sealPayload } from "../../transport/protocol/wire/unit-payload.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";

export const KEY = new Uint8Array(randomBytes(32));
export const VOLUME = "rv";
export const LANE = "l0";
export const WRITER = "w1";
export const MAX_CREDIT = 1 << 16;

export const config = { replicaId: "r1", volume: VOLUME, lanes: [LANE], upstream: [WRITER], term: 2, maxOutstandingCredit: MAX_CREDIT };

export function block(fill: number): Uint8Array {
  return new Uint8Array(BLOCK_SIZE).fill(fill);
}

/** Freezes `v` and everything it holds (byte arrays cannot be frozen and are left as they are). */
export function deepFreeze<T>(v: T): T {
  if (v === null || typeof v !== "object" || ArrayBuffer.isView(v) || Object.isFrozen(v)) return v;
  for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  return Object.freeze(v);
}

/** A replica state as `started` leaves it (incarnation 3, the given flushed position). */
export function startedState(flushedLsn = 0): ReplicaState {
  return replicaStep(initialReplicaState(config, KEY), { type: "started", incarnation: 3, flushedLsn }).state;
}

/** A unit of one record per write, sealed under KEY (term 2 unless told). */
export function unitOf(
  firstSeq: number,
  writes: readonly { lsn: number; lba: number; data: Uint8Array }[],
  over: Partial<{ term: number; lane: string; volume: string; key: Uint8Array }> = {},
): TransportUnit {
  const id = {
    volume: over.volume ?? VOLUME,
    lane: over.lane ?? LANE,
    term: over.term ?? 2,
    firstSeq,
    lastSeq: firstSeq + writes.length - 1,
  };
  const recs = writes.map((w, i) => ({ seq: firstSeq + i, ...w }));
  return makeTransportUnit({ ...id, commitTs: writes.map(() => 1), payload: sealPayload(over.key ?? KEY, id, recs) });
}

export interface Credit {
  session?: number;
  window?: { incarnation: number; window: number };
  sentThrough?: number;
  sender?: string;
}

function headers(c: Credit): Record<string, string> {
  const h: Record<string, string> = { [SENDER_HEADER]: c.sender ?? WRITER };
  if (c.session !== undefined) h[SESSION_HEADER] = String(c.session);
  if (c.window !== undefined) h[CREDIT_WINDOW_HEADER] = creditWindowTag(c.window.incarnation, c.window.window);
  if (c.sentThrough !== undefined) h[SENT_THROUGH_HEADER] = String(c.sentThrough);
  return h;
}

export function unitMessage(u: TransportUnit, c: Credit, lane = LANE): ReplicaStepEvent {
  const msg: InboundMessage = { subject: `unit.${lane}`, data: encodeMessage(unitSpec, u), headers: headers(c) };
  return { type: "nats.message", lane, msg };
}

export function creditRequest(c: Credit): ReplicaStepEvent {
  const body = { sender: c.sender ?? WRITER, holder: "r1", volume: VOLUME, lane: LANE, wantBytes: MAX_CREDIT };
  const msg: InboundMessage = { subject: "unit.l0", data: encodeMessage(creditRequestSpec, body), headers: headers(c) };
  return { type: "nats.message", lane: LANE, msg };
}

export function barrierRequest(targetLsn: number, reply = "_INBOX.1"): ReplicaStepEvent {
  const data = encodeMessage(replicaBarrierSpec, { replica: "r1", volume: VOLUME, targetLsn });
  return { type: "nats.message", lane: LANE, msg: { subject: "unit.l0", data, headers: {}, reply } };
}

export function raw(data: Uint8Array, c: Credit = {}): ReplicaStepEvent {
  return { type: "nats.message", lane: LANE, msg: { subject: "unit.l0", data, headers: headers(c) } };
}

/** Folds `events` from `state`, returning the last state and every effect in order. */
export function run(state: ReplicaState, events: readonly ReplicaStepEvent[]): { state: ReplicaState; effects: ReplicaEffect[] } {
  const effects: ReplicaEffect[] = [];
  for (const e of events) {
    const r = replicaStep(state, e);
    state = r.state;
    effects.push(...r.effects);
  }
  return { state, effects };
}

export const counts = (effects: readonly ReplicaEffect[]) =>
  effects.flatMap((e) => (e.type === "count" ? [e.name] : []));

export const grants = (effects: readonly ReplicaEffect[]) =>
  effects.flatMap((e) => (e.type === "publishGrant" ? [e.grant] : []));

/** A sender that asked for credit once (session 1): the state after its first grant. */
export function granted(): ReplicaState {
  return replicaStep(startedState(), creditRequest({ session: 1 })).state;
}
