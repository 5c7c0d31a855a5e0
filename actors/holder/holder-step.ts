import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { baseReadySpec, creditSpec, decodeMessage, releaseFrontierSpec } from "../../transport/protocol/index.ts";
import { decodeReceiptBatch, receiptBatchSpec } from "../../custody/index.ts";
import type { ConnectionEvent, InboundMessage } from "../../transport/index.ts";
import { protectionStatus, ProtectionStatus } from "../../policies/index.ts";
import { laneKey, type ProtectedRamEvidence } from "./holder-config.ts";
import { rejection, type HolderEffect } from "./holder-effects.ts";
import type { HolderPlainState } from "./holder-state.ts";
import type { FlushOutcome, LoadedUnit } from "./holder-ports.ts";
import { readAuditChallenge, readFetchRequest } from "./holder-read-steps.ts";
import { readTransferOffer } from "./holder-transfer-step.ts";
import { dueLanes, nextDeadline, takeBatch } from "./receipt-batches.ts";

/**
 * The holder's pure steps: (state, event, nowMs) → new state and effects as data. No I/O, no clock
 * (time comes in as `nowMs`), and the input state is never mutated. Events not listed in
 * `HolderStepEvent` are not the step's: they still reach the lane runtime through the executor.
 */

/** What new protected-RAM evidence comes with: the RAM queued at the holder when it was sent. */
export interface EvidenceUpdate {
  readonly type: "evidence.update";
  readonly evidence: ProtectedRamEvidence;
  readonly nowMs: number;
  readonly ramQueuedBytes: number;
}

export type HolderStepEvent =
  | { readonly type: "timer.receipts" }
  | { readonly type: "timer.refresh" }
  | { readonly type: "timer.flush" }
  | { readonly type: "timer.seal"; readonly lane: string }
  | { readonly type: "timer.evacuation" }
  /** Raised by the machine when it enters degraded_evidence. */
  | { readonly type: "evacuation.start" }
  | { readonly type: "flush.completed"; readonly result: FlushOutcome }
  | { readonly type: "release.checked"; readonly lane: string; readonly holder: string; readonly ranges: RangeSet }
  | {
      readonly type: "resend.loaded";
      readonly lane: string;
      readonly edge: string;
      readonly units: readonly LoadedUnit[];
    }
  | { readonly type: "nats.release"; readonly msg: { readonly data: Uint8Array } }
  | { readonly type: "nats.base"; readonly msg: { readonly data: Uint8Array } }
  | { readonly type: "nats.receipt"; readonly lane: string; readonly msg: InboundMessage }
  | EvidenceUpdate
  | { readonly type: "drain" }
  | { readonly type: "transport.connection"; readonly event: ConnectionEvent }
  | { readonly type: "nats.credit"; readonly lane: string; readonly edge: string; readonly msg: InboundMessage }
  | { readonly type: "nats.transfer"; readonly msg: InboundMessage }
  | { readonly type: "nats.fetch"; readonly msg: InboundMessage }
  | { readonly type: "nats.audit"; readonly msg: InboundMessage }
  /** A lane arena child failed (XState's error event of a child actor). */
  | { readonly type: `xstate.error.actor.${string}` };

export interface HolderStepResult {
  readonly state: HolderPlainState;
  readonly effects: readonly HolderEffect[];
}

const unchanged = (state: HolderPlainState, effects: HolderEffect[] = []): HolderStepResult => ({ state, effects });

export function holderStep(state: HolderPlainState, event: HolderStepEvent, nowMs: number): HolderStepResult {
  switch (event.type) {
    case "timer.receipts":
      return flushDueReceipts(state, nowMs);
    case "timer.refresh":
      return refresh(state);
    case "timer.flush":
      return flushTick(state);
    case "timer.seal":
      return unchanged(state, [{ type: "sealDue", lane: event.lane }, { type: "relievePressure" }]);
    case "evacuation.start":
      return startEvacuation(state);
    case "timer.evacuation":
      return evacuationDeadline(state);
    case "flush.completed":
      return flushCompleted(state, event.result);
    case "release.checked":
      return state.lanes[event.lane] === undefined
        ? unchanged(state)
        : unchanged(state, [
            { type: "applyCheckedFrontier", lane: event.lane, holder: event.holder, ranges: event.ranges },
          ]);
    case "resend.loaded":
      return state.lanes[event.lane] === undefined
        ? unchanged(state)
        : unchanged(state, [{ type: "resendLoaded", lane: event.lane, edge: event.edge, units: event.units }]);
    case "nats.release":
      return readReleaseFrontier(state, event.msg.data);
    case "nats.base":
      return noteBaseAnnouncement(state, event.msg.data);
    case "nats.receipt":
      return readLaneReceipt(state, event.lane, event.msg);
    case "evidence.update":
      return updateEvidence(state, event);
    case "drain":
      return stopGranting(state);
    case "transport.connection":
      return connectionChanged(state, event.event);
    case "nats.credit":
      return readGrant(state, event.lane, event.edge, event.msg.data);
    case "nats.transfer":
      return unchanged(state, readTransferOffer(state, event.msg.data));
    case "nats.fetch":
      return unchanged(state, readFetchRequest(state, event.msg));
    case "nats.audit":
      return unchanged(state, readAuditChallenge(state, event.msg));
    default:
      return laneArenaFailed(state, event.type.slice("xstate.error.actor.".length));
  }
}

/**
 * `timer.receipts`: publishes every batch that is full or past its maximum delay, and re-arms the
 * timer for the earliest batch left.
 */
export function flushDueReceipts(state: HolderPlainState, nowMs: number): HolderStepResult {
  const policy = state.config.receipts;
  let batches = { ...state.receipts, armed: false };
  const effects: HolderEffect[] = [];
  for (const lane of dueLanes(batches, policy, nowMs)) {
    const r = takeBatch(batches, lane);
    batches = r.batches;
    effects.push({ type: "publishReceipt", lane, units: r.taken?.units ?? 0, links: r.taken?.links ?? [] });
  }
  const next = nextDeadline(batches, policy);
  if (next !== undefined) {
    batches = { ...batches, armed: true };
    effects.push({ type: "arm", ms: Math.max(0, next - nowMs), event: { type: "timer.receipts" } });
  }
  return { state: { ...state, receipts: batches }, effects };
}

/**
 * `timer.refresh`: receipts lost on the wire are repaired by re-announcing retained coverage, gaps an
 * edge shows are re-sent, memory pressure is relieved, and the next refresh is armed.
 */
export function refresh(state: HolderPlainState): HolderStepResult {
  return unchanged(state, [
    { type: "republishReceipts" },
    { type: "resendDue" },
    { type: "relievePressure" },
    { type: "arm", ms: state.refreshMs, event: { type: "timer.refresh" } },
  ]);
}

/** `timer.flush`: with a flush policy, one flush now and the next tick armed at its interval. */
export function flushTick(state: HolderPlainState): HolderStepResult {
  const policy = state.config.flush;
  if (policy === undefined) return unchanged(state);
  return unchanged(state, [
    { type: "startFlush", all: false },
    { type: "arm", ms: policy.intervalMs, event: { type: "timer.flush" } },
  ]);
}

/**
 * Entering degraded_evidence: protected receipts have already stopped (the bound is checked per
 * receipt); every protected-receipted range is moved out of RAM while the hold-up time lasts, and
 * its end is armed. An evacuation already under way, or one without evidence, changes nothing.
 */
export function startEvacuation(state: HolderPlainState): HolderStepResult {
  const e = state.evidence;
  if (state.evacuating || e === undefined) return unchanged(state);
  return {
    state: { ...state, evacuating: true },
    effects: [{ type: "evacuate" }, { type: "arm", ms: e.holdUpMs, event: { type: "timer.evacuation" } }],
  };
}

/** The hold-up time ended: the evacuation is over, and what it did not save is reported. */
export function evacuationDeadline(state: HolderPlainState): HolderStepResult {
  const effects: HolderEffect[] = [{ type: "evacuationDeadline" }];
  return { state: state.evacuating ? { ...state, evacuating: false } : state, effects };
}

/**
 * A flush finished: its outcome is applied, and during an evacuation the next flush starts at once
 * (new sealed segments, or a missed deadline, still have to leave RAM).
 */
export function flushCompleted(state: HolderPlainState, result: FlushOutcome): HolderStepResult {
  const effects: HolderEffect[] = [{ type: "applyFlush", result }];
  if (state.evacuating && state.config.flush !== undefined) effects.push({ type: "startFlush", all: true });
  return unchanged(state, effects);
}

/**
 * Publishes `lane`'s receipt at once, covering whatever its batch held (and one unit more: the
 * reason it goes out now).
 */
export function publishReceiptNow(state: HolderPlainState, lane: string): HolderStepResult {
  const r = takeBatch(state.receipts, lane);
  const effect: HolderEffect = {
    type: "publishReceipt",
    lane,
    units: (r.taken?.units ?? 0) + 1,
    links: r.taken?.links ?? [],
  };
  return { state: r.batches === state.receipts ? state : { ...state, receipts: r.batches }, effects: [effect] };
}

/**
 * A release frontier from the control log, ours or an edge's: refused (counted, state unchanged)
 * when malformed, for a holder that is neither us nor an edge of the lane, of an older epoch, or
 * for a lane we do not serve; otherwise applied as far as the control log backs it.
 */
export function readReleaseFrontier(state: HolderPlainState, data: Uint8Array): HolderStepResult {
  let f;
  try {
    f = decodeMessage(releaseFrontierSpec, data);
  } catch (err) {
    return unchanged(state, rejection(err instanceof CustodyError ? err.code : "malformed"));
  }
  const { config } = state;
  const key = laneKey(f.volume, f.lane);
  const lane = state.lanes[key];
  if (f.holder !== config.holderId && !lane?.edges.includes(f.holder))
    return unchanged(state, rejection("wrong_holder"));
  if (f.epoch < config.epoch) return unchanged(state, rejection("stale_epoch"));
  if (lane === undefined) return unchanged(state, rejection("unknown_lane"));
  return unchanged(state, [
    { type: "applyFrontier", lane: key, holder: f.holder, ranges: RangeSet.fromJSON(f.ranges) },
  ]);
}

/**
 * A credit grant on the credit subject of one of our lanes' downstream edges: applied to that edge's
 * window when it can be read (grants are absolute: the next good one repairs the window), refused
 * on its lane (counted, state unchanged) when it cannot. A grant for a lane or edge we do not have
 * changes nothing.
 */
export function readGrant(state: HolderPlainState, lane: string, edge: string, data: Uint8Array): HolderStepResult {
  if (!state.lanes[lane]?.edges.includes(edge)) return unchanged(state);
  try {
    return unchanged(state, [{ type: "applyGrant", lane, edge, grant: decodeMessage(creditSpec, data) }]);
  } catch (err) {
    return unchanged(state, rejection(err instanceof CustodyError ? err.code : "malformed", lane));
  }
}

/**
 * A receipt batch on one of our lanes' receipt subject. Our own, and those of holders that are
 * neither an edge of the lane nor the transfer neighbor, are passed over; one whose head cannot be
 * read is refused (`receipt_<code>`, counted, state unchanged). An edge's or the neighbor's goes on
 * to be verified against the peer directory and applied to the lane's obligations (`applyLaneReceipt`).
 */
export function readLaneReceipt(state: HolderPlainState, lane: string, msg: InboundMessage): HolderStepResult {
  const topology = state.lanes[lane];
  if (topology === undefined) return unchanged(state);
  let from: string;
  let signed: { body: Uint8Array; signature: Uint8Array };
  try {
    signed = decodeMessage(receiptBatchSpec, msg.data);
    from = decodeReceiptBatch(signed.body).holder.holderId;
  } catch (err) {
    return unchanged(state, rejection(err instanceof CustodyError ? `receipt_${err.code}` : "receipt_malformed", lane));
  }
  const { config } = state;
  if (from === config.holderId || !(topology.edges.includes(from) || from === config.transferNeighbor))
    return unchanged(state);
  return unchanged(state, [{ type: "applyLaneReceipt", lane, from, signed, msg }]);
}

/**
 * The base builder beside us announces a base snapshot: from now on our receipts of that lane name
 * it, and one goes out at once (newest wins; an older or equal announcement changes nothing).
 * Refused (counted) when malformed, for another holder, or for a lane we do not serve.
 */
export function noteBaseAnnouncement(state: HolderPlainState, data: Uint8Array): HolderStepResult {
  let b;
  try {
    b = decodeMessage(baseReadySpec, data);
  } catch (err) {
    return unchanged(state, rejection(err instanceof CustodyError ? err.code : "malformed"));
  }
  if (b.holder !== state.config.holderId) return unchanged(state, rejection("wrong_holder"));
  const key = laneKey(b.volume, b.lane);
  const lane = state.lanes[key];
  if (lane === undefined) return unchanged(state, rejection("unknown_lane"));
  if (lane.base !== undefined && lane.base.throughSeq >= b.throughSeq) return unchanged(state);
  const base = { snapshotId: b.snapshotId, throughSeq: b.throughSeq, bytes: b.bytes };
  const withBase = { ...state, lanes: { ...state.lanes, [key]: { ...lane, base } } };
  const now = publishReceiptNow(withBase, key);
  return {
    state: now.state,
    effects: [{ type: "count", name: "base_announced" }, ...now.effects],
  };
}

/**
 * New protected-RAM evidence replaces the old one. The state holds the only copy: credit caps and
 * protected receipts read it from there from now on.
 */
export function updateEvidence(state: HolderPlainState, e: EvidenceUpdate): HolderStepResult {
  return { state: { ...state, evidence: e.evidence }, effects: [{ type: "evidenceChanged" }] };
}

/** The connection changed: counted as `connection_<event>`; a reconnect re-announces what was lost meanwhile. */
export function connectionChanged(state: HolderPlainState, e: ConnectionEvent): HolderStepResult {
  const count: HolderEffect = { type: "count", name: `connection_${e}` };
  return unchanged(state, e === "reconnected" ? [count, { type: "reconnected" }] : [count]);
}

/**
 * Draining: no new credit is promised (what is already credited is still admitted). Granting once
 * stopped does not start again; a second drain changes nothing.
 */
export function stopGranting(state: HolderPlainState): HolderStepResult {
  if (!state.granting) return unchanged(state);
  return { state: { ...state, granting: false }, effects: [{ type: "closeGrants" }] };
}

/**
 * True when `e`'s evidence no longer covers the RAM queued at the holder (stale, too weak, or the
 * bound exceeded): the holder then evacuates. Never without protected-RAM configuration.
 */
export function evidenceDegrades(state: HolderPlainState, e: EvidenceUpdate): boolean {
  const p = state.config.protectedRam;
  if (!p) return false;
  return protectionStatus(e.evidence, e.ramQueuedBytes, e.nowMs, p) !== ProtectionStatus.Ok;
}

/** A lane's arena actor failed: its lane refuses from now on (`lane_arena_stopped`); counted and recorded. */
export function laneArenaFailed(state: HolderPlainState, childId: string): HolderStepResult {
  return unchanged(state, [
    { type: "count", name: "lane_arena_failed" },
    { type: "observe", observation: { type: "rejected", code: `lane_arena_failed.${childId}` } },
  ]);
}
