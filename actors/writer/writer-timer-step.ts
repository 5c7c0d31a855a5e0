import {
  encodeMessage,
  eventSubject,
  laneManifestSpec,
  MANIFEST_MAX_LANES,
  unitSubject,
  writerProgressSpec,
} from "../../transport/protocol/index.ts";
import { SENDER_HEADER } from "../../transport/index.ts";
import { dueInRecord, edgePending, ledgerRestartEdge, nextResendBackoff, recordSend } from "../hop/index.ts";
import { listLast } from "./chunked-list.ts";
import type { StepResult, WriterEffect } from "./writer-effects.ts";
import { edgeKey, type WriterEvent } from "./writer-events.ts";
import { unchanged, unitsWithin, withLane } from "./writer-custody.ts";
import { resendAfterMs, type WriterLaneState, type WriterState } from "./writer-state.ts";

/**
 * The writer's repeating work, pure: gap repair toward first hops (re-sends of what a first hop
 * has not receipted a while after its last send), progress and manifest publication, and the
 * resets that make everything unreceipted due at once (reconnect, a first hop's restart).
 */

type Ev<T extends WriterEvent["type"]> = Extract<WriterEvent, { type: T }>;
type Out = StepResult<WriterState>;

/** Re-sends, per first hop, the retained units it has not receipted a while after their last send. */
function resendLane(l: WriterLaneState, now: number, afterMs: number, busy: ReadonlySet<string>, fx: WriterEffect[]) {
  let lane = l;
  const name = l.spec.lane;
  for (const h of Object.keys(l.ledger.edges)) {
    // Units still queued for credit are not lost: re-queuing would only grow the queue.
    if (busy.has(edgeKey(name, h))) continue;
    const pending = edgePending(lane.ledger, lane.retained, h);
    if (pending.isEmpty) continue;
    const log = lane.sendLogs[h];
    const seqs = log === undefined ? pending : dueInRecord(log, pending, now, afterMs * (lane.backoff[h] ?? 1));
    if (seqs.isEmpty) continue;
    const units = unitsWithin(lane, seqs);
    let sendLogs = lane.sendLogs;
    if (units.length > 0) {
      let next = log ?? [];
      for (const u of units) next = recordSend(next, u.firstSeq, u.lastSeq, now);
      sendLogs = { ...sendLogs, [h]: next };
      fx.push(
        { type: "resend", lane: name, holder: h, units },
        { type: "count", name: "retransmit", by: units.length },
      );
    }
    lane = { ...lane, sendLogs, backoff: { ...lane.backoff, [h]: nextResendBackoff(lane.backoff[h]) } };
  }
  return lane;
}

/** Gap repair over every lane (raw and derived). */
export function resendDue(s: WriterState, now: number, busy: readonly string[], effects: WriterEffect[]): WriterState {
  const afterMs = resendAfterMs(s);
  const idle = new Set(busy);
  let next = s;
  for (const name of s.all) {
    const l = next.lanes[name]!;
    const lane = resendLane(l, now, afterMs, idle, effects);
    if (lane !== l) next = withLane(next, name, lane);
  }
  return next;
}

/** Ships the newest consistency manifest of a multi-lane volume to every first hop, when due. */
function shipManifest(s: WriterState, now: number, effects: WriterEffect[]): WriterState {
  const newest = listLast(s.cuts);
  if (newest === undefined || s.order.length < 2 || s.order.length > MANIFEST_MAX_LANES) return s;
  const shipped = s.manifestShipped;
  if (newest.lsn === shipped.lsn && now - shipped.at < resendAfterMs(s)) return s;
  const cut = Object.entries(newest.lanes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const { writerId: writer, volume, term } = s.config;
  const payload = encodeMessage(laneManifestSpec, { writer, volume, term, lsn: newest.lsn, cut });
  const headers = { [SENDER_HEADER]: writer };
  for (const n of s.order)
    for (const hop of Object.keys(s.lanes[n]!.ledger.edges))
      effects.push({ type: "publish", subject: unitSubject(hop, volume, n), payload, headers });
  effects.push({ type: "count", name: `manifest_${newest.lsn === shipped.lsn ? "reshipped" : "shipped"}` });
  return { ...s, manifestShipped: { lsn: newest.lsn, at: now } };
}

/** Publishes what was written since the last progress message (for the controller's RPO). */
function publishProgress(s: WriterState, now: number, effects: WriterEffect[]): WriterState {
  // The coalesced stream's `windowMs` cadence rides on this timer.
  if (s.config.coalesced !== undefined) effects.push({ type: "coalesceTick" });
  let next = shipManifest(s, now, effects);
  const lanes = s.order.map((n) => {
    const l = next.lanes[n]!;
    const runs = l.runs.slice(0, 4096) as [number, number, number, number][];
    if (l.runs.length > 0) next = withLane(next, n, { ...l, runs: l.runs.slice(4096) });
    return { lane: n, head: l.next - 1, runs };
  });
  const { writerId: writer, volume, term } = s.config;
  const payload = encodeMessage(writerProgressSpec, { writer, volume, term, lanes, at: now });
  effects.push({ type: "publish", subject: eventSubject(volume), payload });
  return next;
}

/** The resend timer, with the time and the first hops whose credit senders are busy. */
export function onResendDue(s: WriterState, e: Ev<"resend.due">): Out {
  const effects: WriterEffect[] = [];
  return { state: resendDue(s, e.nowMs, e.busy, effects), effects };
}

/** The progress timer. */
export function onProgressDue(s: WriterState, e: Ev<"progress.due">): Out {
  const effects: WriterEffect[] = [];
  return { state: publishProgress(s, e.nowMs, effects), effects };
}

/**
 * The connection changed. After a reconnect whatever was published meanwhile is gone: credit is
 * asked for again and every unit a first hop has not receipted is re-sent at once.
 */
export function connectionChanged(s: WriterState, e: Ev<"transport.connection">): Out {
  const effects: WriterEffect[] = [{ type: "count", name: `connection_${e.event}` }];
  if (e.event !== "reconnected") return unchanged(s, effects);
  let next = s;
  for (const n of s.order) {
    const l = next.lanes[n]!;
    const sendLogs = { ...l.sendLogs };
    for (const h of Object.keys(l.ledger.edges)) {
      effects.push({ type: "requestCredit", lane: n, holder: h });
      if (sendLogs[h] !== undefined) sendLogs[h] = [];
    }
    next = withLane(next, n, { ...l, sendLogs, backoff: {} });
  }
  next = resendDue(next, e.nowMs, e.busy, effects);
  return { state: publishProgress(next, e.nowMs, effects), effects };
}

/**
 * A first hop started us over: as a new incarnation (nothing it receipted counts) or with a new
 * credit window (nothing sent before was credited). Every unit it has not receipted is due at once.
 */
export function edgeReset(s: WriterState, e: Ev<"edge.reset">): Out {
  const l = s.lanes[e.lane];
  const effects: WriterEffect[] = [
    { type: "count", name: e.restarted ? "first_hop_restarted" : "first_hop_new_window" },
  ];
  if (l === undefined || l.ledger.edges[e.holder] === undefined) return unchanged(s, effects);
  const ledger = e.restarted ? ledgerRestartEdge(l.ledger, e.holder, e.incarnation) : l.ledger;
  const sendLogs = l.sendLogs[e.holder] === undefined ? l.sendLogs : { ...l.sendLogs, [e.holder]: [] };
  const backoff = { ...l.backoff };
  delete backoff[e.holder];
  return { state: withLane(s, e.lane, { ...l, ledger, sendLogs, backoff }), effects };
}
