import { RangeSet } from "../../lanes/index.ts";
import { coveredByAllEdges, edgeCovered, forgetInRecord, type SendRecord } from "../hop/index.ts";
import { listDropFirst, listItems } from "./chunked-list.ts";
import { protectedSeqs } from "./protection.ts";
import { UnknownContractError, WriteRejectedError } from "./writer-config.ts";
import type { StepResult, WriterEffect, WriterRefusal } from "./writer-effects.ts";
import {
  custodyBacklogBytes,
  maxBacklogBytes,
  type ProtectionWaiter,
  type RetainedUnit,
  type WriterLaneState,
  type WriterState,
} from "./writer-state.ts";

/**
 * Pure custody bookkeeping shared by the writer's step functions: protection under a contract,
 * dropping what every first hop holds, waking protected syncs and backpressured writes.
 */

/** The state with lane `name` replaced. */
export function withLane(s: WriterState, name: string, lane: WriterLaneState): WriterState {
  return { ...s, lanes: { ...s.lanes, [name]: lane } };
}

/** Highest `s` such that every sequence of `lane` from its first through `s` is proven under `contract`. */
export function protectedThrough(s: WriterState, contract: string, lane: string): number {
  const ct = s.config.contracts.find((c) => c.name === contract);
  if (ct === undefined) throw new UnknownContractError(contract);
  const l = s.lanes[lane];
  if (l === undefined) throw new WriteRejectedError(`unknown lane ${lane}`, { lane });
  const proven = new Map(Object.entries(l.proven));
  return protectedSeqs(proven, s.config.holderSites, ct).contiguousThrough(l.spec.firstSeq ?? 1);
}

function satisfied(s: WriterState, w: ProtectionWaiter): boolean {
  return Object.entries(w.target).every(
    ([lane, head]) => head < (s.lanes[lane]!.spec.firstSeq ?? 1) || protectedThrough(s, w.contract, lane) >= head,
  );
}

/** The timer of waiter `id`'s timeout. */
export const waiterTimer = (id: number): string => `waiter-${id}`;

/** Resolves every protected sync whose target is now proven (after a receipt or an edge release). */
export function wakeWaiters(s: WriterState, effects: WriterEffect[]): WriterState {
  if (s.waiters.length === 0) return s;
  const left = s.waiters.filter((w) => {
    if (!satisfied(s, w)) return true;
    effects.push({ type: "cancel", timer: waiterTimer(w.id) });
    effects.push({ type: "reply", id: w.id, value: { durableLsn: w.durableLsn, heads: { ...w.target } } });
    return false;
  });
  return left.length === s.waiters.length ? s : { ...s, waiters: left };
}

/** Fails every protected sync with `refusal` (fenced or stopped). */
export function failWaiters(s: WriterState, refusal: WriterRefusal, effects: WriterEffect[]): WriterState {
  for (const w of s.waiters) {
    effects.push({ type: "cancel", timer: waiterTimer(w.id) });
    effects.push({ type: "refuse", id: w.id, refusal });
  }
  return s.waiters.length === 0 ? s : { ...s, waiters: [] };
}

/** A receipt (or release) from `edge` arrived: drop its send records of what it covers; progress ends its backoff. */
export function forgetReceipted(l: WriterLaneState, edge: string, progressed: boolean): WriterLaneState {
  const log = l.sendLogs[edge];
  const sendLogs =
    log === undefined ? l.sendLogs : { ...l.sendLogs, [edge]: forgetInRecord(log, edgeCovered(l.ledger, edge)) };
  if (!progressed || l.backoff[edge] === undefined) return { ...l, sendLogs };
  const backoff = { ...l.backoff };
  delete backoff[edge];
  return { ...l, sendLogs, backoff };
}

/** Drops the retained prefix of units wholly inside `done`; returns what it dropped. */
function dropUnits(l: WriterLaneState, done: RangeSet): { lane: WriterLaneState; dropped: RangeSet } {
  let dropped = RangeSet.EMPTY;
  let count = 0;
  let bytes = 0;
  for (const u of listItems(l.units)) {
    if (!done.covers(u.firstSeq, u.lastSeq)) break;
    dropped = dropped.add(u.firstSeq, u.lastSeq);
    bytes += u.data.byteLength;
    count++;
  }
  if (count === 0) return { lane: l, dropped };
  const units = listDropFirst(l.units, count);
  return { lane: { ...l, units, unitBytes: l.unitBytes - bytes }, dropped };
}

/**
 * Forgets units every first hop's current incarnation has receipted (and, by default, the
 * controller confirmed), and lets backpressured writes in once the backlog is under the bound.
 */
export function dropReceipted(s: WriterState, name: string, effects: WriterEffect[]): WriterState {
  const l = s.lanes[name]!;
  let done = coveredByAllEdges(l.ledger, l.retained);
  if ((s.config.retainUntil ?? "confirmed") === "confirmed")
    done = done.intersect(RangeSet.of(0, Math.max(0, l.confirmed)));
  if (done.isEmpty) return s;
  const { lane, dropped } = dropUnits(l, done);
  if (dropped.isEmpty) return s;
  const sendLogs: Record<string, SendRecord> = {};
  for (const [h, log] of Object.entries(lane.sendLogs)) sendLogs[h] = forgetInRecord(log, dropped);
  const next = withLane(s, name, {
    ...lane,
    retained: lane.retained.subtract(dropped),
    released: lane.released.union(dropped),
    sendLogs,
  });
  if (s.hasOutbox) effects.push({ type: "outboxDrop", lane: name, seqs: dropped });
  return admitWaiting(next, effects);
}

/** Backpressured writes go to the volume once the backlog is under the bound (all of them, in order). */
export function admitWaiting(s: WriterState, effects: WriterEffect[]): WriterState {
  if (s.waiting.length === 0 || custodyBacklogBytes(s) >= maxBacklogBytes(s)) return s;
  for (const w of s.waiting) effects.push({ type: "walWrite", id: w.id, lba: w.lba, data: w.data });
  return { ...s, waiting: [], walInFlight: s.walInFlight + s.waiting.length };
}

/** Retained units of lane `l` lying wholly inside `seqs`, in order. */
export function unitsWithin(l: WriterLaneState, seqs: RangeSet): RetainedUnit[] {
  const out: RetainedUnit[] = [];
  for (const u of listItems(l.units)) if (seqs.covers(u.firstSeq, u.lastSeq)) out.push(u);
  return out;
}

/** The result of a step that changed nothing. */
export const unchanged = (s: WriterState, effects: WriterEffect[] = []): StepResult<WriterState> => ({
  state: s,
  effects,
});
