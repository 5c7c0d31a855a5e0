import type { CustodyError } from "../../core/index.ts";
import type { WriteRecord } from "../../transport/protocol/index.ts";
import { recordSend } from "../hop/index.ts";
import { listLast, listDropFirst, listPush, listReplaceLast, type ChunkedList } from "./chunked-list.ts";
import { splitWrite } from "./write-split.ts";
import type { CoalesceNote, StepResult, WriterEffect } from "./writer-effects.ts";
import type { WriteCall, WriterEvent } from "./writer-events.ts";
import { protectedThrough, unchanged, waiterTimer, wakeWaiters, withLane } from "./writer-custody.ts";
import type { WriterCut } from "./writer-ports.ts";
import {
  custodyBacklogBytes,
  laneHeads,
  maxBacklogBytes,
  progressEveryMs,
  type CommitRun,
  type RetainedUnit,
  type WriterLaneState,
  type WriterState,
} from "./writer-state.ts";

/**
 * The writer's write side, pure: a write is checked and sent to SmartWAL (or waits while the
 * custody backlog is at its bound); completed writes (one batch per event) go into their lanes'
 * open units; the group commit's cut (in that step when nothing is left in flight, else one delayed
 * `cut` event) seals them; sealed units are retained, made durable in the outbox and only then sent
 * to every first hop.
 */

type Ev<T extends WriterEvent["type"]> = Extract<WriterEvent, { type: T }>;
type Out = StepResult<WriterState>;

/** Most manifests kept for `manifests()`. */
const MAX_CUTS = 65_536;

/** A write: refused (counted) when malformed, queued behind the backpressure bound, or sent to SmartWAL. */
export function admitWrite(s: WriterState, e: WriteCall): Out {
  try {
    splitWrite(s.specs, s.config.volume, e.lba, e.data instanceof Uint8Array ? e.data.length : NaN);
  } catch (err) {
    const x = err as CustodyError;
    return unchanged(s, [
      { type: "count", name: x.code },
      { type: "refuse", id: e.id, refusal: { kind: "rejected", message: x.message, detail: x.detail } },
    ]);
  }
  const walWrite = { type: "walWrite", id: e.id, lba: e.lba, data: e.data } as const;
  // Custody off: the same SmartWAL path, nothing shipped.
  if (s.config.custody === false) return unchanged(s, [walWrite]);
  // Backpressure: a write that comes while others wait queues behind them (writes keep their order).
  if (s.waiting.length === 0 && custodyBacklogBytes(s) < maxBacklogBytes(s))
    return { state: { ...s, walInFlight: s.walInFlight + 1 }, effects: [walWrite] };
  const waiting = [...s.waiting, { id: e.id, lba: e.lba, data: e.data }];
  return { state: { ...s, waiting }, effects: [{ type: "count", name: "write_backpressure" }] };
}

/** The write calls of one turn: each admitted as its own `write` would be, in order. */
export function admitWrites(s: WriterState, e: Ev<"writes">): Out {
  let state = s;
  const effects: WriterEffect[] = [];
  for (const w of e.writes) {
    const out = admitWrite(state, w);
    state = out.state;
    for (const x of out.effects) effects.push(x);
  }
  return { state, effects };
}

/** A lane's open-unit fields being filled by one batch (copied once per batch, on first touch). */
interface Filling {
  next: number;
  pending: WriteRecord[];
  pendingTs: number[];
  pendingBytes: number;
  runs: CommitRun[];
}

function sealEffect(lane: string, pending: readonly WriteRecord[], ts: readonly number[]): WriterEffect {
  return {
    type: "seal",
    lane,
    firstSeq: pending[0]!.seq,
    lastSeq: pending[pending.length - 1]!.seq,
    records: pending,
    commitTs: ts,
  };
}

/** Appends one record to a filling lane: its commit run, and a cut once the unit is full. */
function fill(f: Filling, lane: string, rec: WriteRecord, now: number, runs: boolean, full: number): WriterEffect[] {
  const len = rec.data.length;
  f.pending.push(rec);
  f.pendingTs.push(now);
  f.pendingBytes += len;
  if (runs) {
    const last = f.runs[f.runs.length - 1];
    if (last !== undefined && last[1] === rec.seq - 1 && last[2] === now && last[3] === len)
      f.runs[f.runs.length - 1] = [last[0], rec.seq, now, len];
    else f.runs.push([rec.seq, rec.seq, now, len]);
  }
  if (f.pendingBytes < full) return [];
  const cut = sealEffect(lane, f.pending, f.pendingTs);
  f.pending = [];
  f.pendingTs = [];
  f.pendingBytes = 0;
  return [cut];
}

/** A multi-lane cut's manifest at `lsn`: the lane heads after it. */
function noteCut(s: WriterState, cuts: ChunkedList<WriterCut>, lsn: number, touched: Map<string, Filling>) {
  const lanes: Record<string, number> = {};
  for (const n of s.order) lanes[n] = (touched.get(n)?.next ?? s.lanes[n]!.next) - 1;
  const cut = { lsn, lanes };
  const out = listLast(cuts)?.lsn === lsn ? listReplaceLast(cuts, cut) : listPush(cuts, cut);
  return out.size > MAX_CUTS ? listDropFirst(out, out.size - MAX_CUTS) : out;
}

/**
 * A batch of completed SmartWAL writes: one record per lane piece (from the write's own buffer,
 * never re-read) joins the lane's open unit, each write is acknowledged with its LSN and lane
 * sequences, and the group commit is cut (or its cut scheduled once).
 */
export function walWritten(s: WriterState, e: Ev<"wal.written">): Out {
  const effects: WriterEffect[] = [];
  if (s.config.custody === false) {
    for (const w of e.writes) effects.push({ type: "reply", id: w.id, value: { lsn: w.lsn, pieces: [] } });
    return unchanged(s, effects);
  }
  const now = e.nowMs;
  const full = s.config.maxUnitPayloadBytes ?? 64 * 1024;
  const runs = progressEveryMs(s) > 0; // nothing publishes runs otherwise
  const notes: CoalesceNote[] | undefined = s.config.coalesced === undefined ? undefined : [];
  const touched = new Map<string, Filling>();
  let cuts = s.cuts;
  for (const w of e.writes) {
    const pieces = splitWrite(s.specs, s.config.volume, w.lba, w.data.length);
    const acked: { lane: string; seq: number }[] = [];
    pieces.forEach((p, i) => {
      let f = touched.get(p.lane);
      if (f === undefined) {
        const l = s.lanes[p.lane]!;
        f = { ...l, pending: [...l.pending], pendingTs: [...l.pendingTs], runs: [...l.runs] };
        touched.set(p.lane, f);
      }
      const rec: WriteRecord = { seq: f.next++, lsn: w.lsn, lba: p.lba, data: w.data.subarray(p.from, p.to) };
      notes?.push({ lane: p.lane, rec, at: now, endOfWrite: i === pieces.length - 1 });
      for (const x of fill(f, p.lane, rec, now, runs, full)) effects.push(x);
      acked.push({ lane: p.lane, seq: rec.seq });
    });
    if (s.order.length > 1) cuts = noteCut(s, cuts, w.lsn, touched);
    effects.push({ type: "reply", id: w.id, value: { lsn: w.lsn, pieces: acked } });
  }
  const lanes: Record<string, WriterLaneState> = { ...s.lanes };
  for (const [n, f] of touched) {
    const { next, pending, pendingTs, pendingBytes, runs: r } = f;
    lanes[n] = { ...s.lanes[n]!, next, pending, pendingTs, pendingBytes, runs: r };
  }
  if (notes !== undefined && notes.length > 0) effects.push({ type: "coalesce", notes });
  return groupCommit({ ...s, lanes, cuts }, e.writes.length + (e.failed ?? 0), effects);
}

/**
 * The group commit after a batch of completions: with no SmartWAL write left in flight the batch is
 * the whole group, cut now (no timer between a lone write and its unit); otherwise one zero-delay
 * `cut` lets the writes still in flight join the same units.
 */
function groupCommit(s: WriterState, completed: number, effects: WriterEffect[]): Out {
  const walInFlight = Math.max(0, s.walInFlight - completed);
  if (walInFlight === 0) {
    if (s.cutQueued) effects.push({ type: "cancel", timer: "cut" });
    const next = cutAll({ ...s, walInFlight, cutQueued: false }, effects);
    if (s.config.coalesced !== undefined) effects.push({ type: "coalesceTick" });
    return { state: next, effects };
  }
  if (!s.cutQueued) effects.push({ type: "schedule", timer: "cut", delayMs: 0, event: { type: "cut" } });
  return { state: { ...s, walInFlight, cutQueued: true }, effects };
}

/** Seals lane `name`'s open unit, if it has records. */
function cutLane(s: WriterState, name: string, effects: WriterEffect[]): WriterState {
  const l = s.lanes[name]!;
  if (l.pending.length === 0) return s;
  effects.push(sealEffect(name, l.pending, l.pendingTs));
  return withLane(s, name, { ...l, pending: [], pendingTs: [], pendingBytes: 0 });
}

/** Seals every raw lane's open unit. */
function cutAll(s: WriterState, effects: WriterEffect[]): WriterState {
  let next = s;
  for (const n of s.order) next = cutLane(next, n, effects);
  return next;
}

/** The group commit's cut: the units the writes since the last cut went into are sealed. */
export function cut(s: WriterState): Out {
  const effects: WriterEffect[] = [];
  const next = cutAll({ ...s, cutQueued: false }, effects);
  if (s.config.coalesced !== undefined) effects.push({ type: "coalesceTick" });
  return { state: next, effects };
}

/** Sends `unit` of lane `name` to every first hop now, noting the send per hop. */
function sendUnit(s: WriterState, name: string, unit: RetainedUnit, now: number, effects: WriterEffect[]) {
  const l = s.lanes[name]!;
  const sendLogs = { ...l.sendLogs };
  for (const h of Object.keys(l.ledger.edges))
    sendLogs[h] = recordSend(sendLogs[h] ?? [], unit.firstSeq, unit.lastSeq, now);
  effects.push({ type: "send", lane: name, unit }, { type: "count", name: "units_sent" });
  return withLane(s, name, { ...l, sendLogs });
}

/**
 * A sealed unit (raw, derived, or re-shipped from the outbox): retained for re-sending, admitted
 * as an obligation toward every first hop, and sent — after the outbox made it durable, when there is one.
 */
export function unitSealed(s: WriterState, e: Ev<"unit.sealed">): Out {
  const l = s.lanes[e.lane];
  if (l === undefined) return unchanged(s);
  const u = e.unit;
  const admitted = !l.released.overlaps(u.firstSeq, u.lastSeq);
  const lane = {
    ...l,
    units: listPush(l.units, u),
    unitBytes: l.unitBytes + u.data.byteLength,
    retained: admitted ? l.retained.add(u.firstSeq, u.lastSeq) : l.retained,
  };
  const next = withLane(s, e.lane, lane);
  const effects: WriterEffect[] = [];
  if (!s.hasOutbox) return { state: sendUnit(next, e.lane, u, e.nowMs, effects), effects };
  const outboxQueue = [...s.outboxQueue, { lane: e.lane, unit: u }];
  if (s.outboxFlushing) return { state: { ...next, outboxQueue }, effects };
  effects.push({ type: "outboxFlush", covered: outboxQueue.length });
  return { state: { ...next, outboxQueue, outboxFlushing: true }, effects };
}

/** The outbox flush made the first `covered` queued units durable: they go out; the next flush starts. */
export function outboxFlushed(s: WriterState, e: Ev<"outbox.flushed">): Out {
  const effects: WriterEffect[] = [];
  let next: WriterState = { ...s, outboxQueue: s.outboxQueue.slice(e.covered), outboxFlushing: false };
  for (const q of s.outboxQueue.slice(0, e.covered)) next = sendUnit(next, q.lane, q.unit, e.nowMs, effects);
  if (next.outboxQueue.length === 0) return { state: next, effects };
  effects.push({ type: "outboxFlush", covered: next.outboxQueue.length });
  return { state: { ...next, outboxFlushing: true }, effects };
}

/** The outbox flush failed: not durable, so not sent; the next unit or sync tries again. */
export function outboxFailed(s: WriterState): Out {
  return { state: { ...s, outboxFlushing: false }, effects: [{ type: "count", name: "outbox_flush_failed" }] };
}

/**
 * A sync: every raw lane's open unit is sealed and the volume and outbox are made durable
 * (`syncLocal`); with a contract, the heads now are what receipts must then prove.
 */
export function admitSync(s: WriterState, e: Ev<"sync">): Out {
  const contract = e.contract;
  if (contract !== undefined && !s.config.contracts.some((c) => c.name === contract))
    return unchanged(s, [
      { type: "count", name: "unknown_contract" },
      { type: "refuse", id: e.id, refusal: { kind: "unknown_contract", contract } },
    ]);
  const effects: WriterEffect[] = [];
  const target = laneHeads(s);
  const next = cutAll(s, effects);
  effects.push({ type: "syncLocal", id: e.id, contract, target, timeoutMs: e.timeoutMs ?? 10_000 });
  return { state: next, effects };
}

/** The local sync completed: answered now, or a protection waiter with its timeout. */
export function syncLocal(s: WriterState, e: Ev<"sync.local">): Out {
  const value = { durableLsn: e.durableLsn, heads: { ...e.target } };
  if (e.contract === undefined) return unchanged(s, [{ type: "reply", id: e.id, value }]);
  if (s.fencedBy !== undefined || s.stopped) {
    const detail = { term: s.config.term, newTerm: s.fencedBy };
    return unchanged(s, [{ type: "refuse", id: e.id, refusal: { kind: "fenced", detail } }]);
  }
  const waiter = { id: e.id, contract: e.contract, target: e.target, durableLsn: e.durableLsn };
  const effects: WriterEffect[] = [];
  const next = wakeWaiters({ ...s, waiters: [...s.waiters, waiter] }, effects);
  if (next.waiters.some((w) => w.id === e.id)) {
    const event = { type: "waiter.timeout", id: e.id } as const;
    effects.push({ type: "schedule", timer: waiterTimer(e.id), delayMs: e.timeoutMs, event });
  }
  return { state: next, effects };
}

/** A protected sync's deadline passed before receipts proved its contract. */
export function waiterTimeout(s: WriterState, e: Ev<"waiter.timeout">): Out {
  const w = s.waiters.find((x) => x.id === e.id);
  if (w === undefined) return unchanged(s);
  const proven = Object.fromEntries(Object.keys(w.target).map((l) => [l, protectedThrough(s, w.contract, l)]));
  const detail = { contract: w.contract, target: w.target, proven };
  return {
    state: { ...s, waiters: s.waiters.filter((x) => x !== w) },
    effects: [
      { type: "count", name: "protection_timeout" },
      { type: "refuse", id: w.id, refusal: { kind: "protection_timeout", detail } },
    ],
  };
}
