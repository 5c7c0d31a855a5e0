import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { decodeMessage, releaseFrontierSpec, volumeStatusSpec } from "../../transport/protocol/index.ts";
import {
  edgeCovered,
  ledgerApplyReceipt,
  ledgerReleasedAtEdge,
  type EdgeLedger,
  type SendRecord,
} from "../hop/index.ts";
import { confirmedCuts } from "./confirmed-cut.ts";
import { provableByTerm } from "./receipt-terms.ts";
import type { StepResult, WriterEffect } from "./writer-effects.ts";
import type { WriterEvent } from "./writer-events.ts";
import { dropReceipted, failWaiters, forgetReceipted, unchanged, wakeWaiters, withLane } from "./writer-custody.ts";
import type { WriterState } from "./writer-state.ts";

/**
 * The writer's receipt side, pure: verified receipt batches fold into per-lane protection and
 * first-hop obligations, the controller's status confirms cuts, first hops' release frontiers
 * end obligations, and each of them may drop retained units and wake protected syncs.
 */

type Ev<T extends WriterEvent["type"]> = Extract<WriterEvent, { type: T }>;
type Out = StepResult<WriterState>;

const codeOf = (err: unknown, fallback: string): string => (err instanceof CustodyError ? err.code : fallback);

/**
 * A verified receipt batch on one of our lanes: what it proves for our term joins the holder's
 * proven set, and a first hop's receipts its obligations. A batch the obligations refuse (stale
 * epoch or incarnation) is counted as `receipt_<code>` and changes nothing.
 */
export function foldReceipt(s: WriterState, e: Ev<"receipt">): Out {
  const effects: WriterEffect[] = [];
  const next = foldBatch(s, e, effects);
  return next === s ? { state: s, effects } : { state: wakeWaiters(next, effects), effects };
}

/**
 * The receipt batches of one turn, folded in arrival order as each would be alone; protected syncs
 * are woken once at the end (proven sets only grow while receipts fold, so the same ones wake).
 */
export function foldReceipts(s: WriterState, e: Ev<"receipts">): Out {
  const effects: WriterEffect[] = [];
  let next = s;
  for (const b of e.batches) {
    if (b.type === "receipt") next = foldBatch(next, b, effects);
    else effects.push({ type: "count", name: `receipt_${b.code}` });
  }
  return next === s ? { state: s, effects } : { state: wakeWaiters(next, effects), effects };
}

/** Folds one verified batch (its effects pushed to `effects`); a refused one returns `s` itself. */
function foldBatch(s: WriterState, e: Ev<"receipt">, effects: WriterEffect[]): WriterState {
  const l = s.lanes[e.lane];
  if (l === undefined) return s;
  const h = e.holder;
  const term = s.config.term;
  const firstHop = l.ledger.edges[h] !== undefined;
  const before = firstHop ? edgeCovered(l.ledger, h) : RangeSet.EMPTY;
  let got = l.proven[h] ?? RangeSet.EMPTY;
  let ledger: EdgeLedger = l.ledger;
  let restartedLog = false;
  let newestTerm = s.newestTerm;
  let otherTerm = 0;
  try {
    for (const r of e.receipts) {
      if (r.writerTerm > term) newestTerm = Math.max(newestTerm, r.writerTerm);
      const retained = provableByTerm(r.writerTerm, term, l.spec.firstSeq ?? 1, r.retained);
      if (retained === undefined) {
        otherTerm++;
        continue;
      }
      got = got.union(retained);
      if (!firstHop) continue;
      const applied = ledgerApplyReceipt(ledger, {
        holder: h,
        incarnation: e.incarnation,
        epoch: r.topologyEpoch,
        receiptSeq: r.receiptSeq,
        retained,
      });
      ledger = applied.ledger;
      restartedLog ||= applied.restarted;
    }
  } catch (err) {
    effects.push({ type: "count", name: `receipt_${codeOf(err, "invalid")}` });
    return s;
  }
  if (otherTerm > 0) effects.push({ type: "count", name: "receipt_other_term", by: otherTerm });
  let sendLogs: Readonly<Record<string, SendRecord>> = l.sendLogs;
  if (restartedLog && sendLogs[h] !== undefined) sendLogs = { ...sendLogs, [h]: [] };
  let lane = { ...l, proven: { ...l.proven, [h]: got }, ledger, sendLogs };
  if (firstHop) lane = forgetReceipted(lane, h, !before.coversAll(edgeCovered(ledger, h)));
  const base = newestTerm === s.newestTerm ? s : { ...s, newestTerm };
  let next = withLane(base, e.lane, lane);
  if (firstHop) next = dropReceipted(next, e.lane, effects);
  effects.push({ type: "receiptFolded", lane: e.lane });
  return next;
}

/** A receipt batch the ingress could not verify: counted by its code, nothing changes. */
export function refuseReceipt(s: WriterState, e: Ev<"receipt.invalid">): Out {
  return unchanged(s, [{ type: "count", name: `receipt_${e.code}` }]);
}

/**
 * The controller's status document: per lane, the cut every required scenario keeps on fresh
 * evidence; units through it may go once every first hop holds them. A document for another
 * volume, or confirming past a head, is counted as `status_<code>` and changes nothing.
 */
export function foldStatus(s: WriterState, e: Ev<"nats.status">): Out {
  let cuts: [{ spec: { lane: string }; confirmed: number }, number][];
  try {
    const lanes = s.order.map((n) => s.lanes[n]!);
    cuts = confirmedCuts(decodeMessage(volumeStatusSpec, e.data), s.config.volume, lanes);
  } catch (err) {
    return unchanged(s, [{ type: "count", name: `status_${codeOf(err, "invalid")}` }]);
  }
  const effects: WriterEffect[] = [];
  let next = s;
  for (const [l, cut] of cuts) {
    if (cut <= l.confirmed) continue;
    const name = l.spec.lane;
    next = withLane(next, name, { ...next.lanes[name]!, confirmed: cut });
    next = dropReceipted(next, name, effects);
  }
  return { state: next, effects };
}

/**
 * A first hop's release frontier from the control log (bytes as published). Malformed, foreign
 * or stale frontiers are counted and change nothing; others are checked against the control log
 * (`backRelease`) before they count.
 */
export function foldEdgeRelease(s: WriterState, e: Ev<"nats.release">): Out {
  let f;
  try {
    f = decodeMessage(releaseFrontierSpec, e.data);
  } catch (err) {
    return unchanged(s, [{ type: "count", name: `edge_release_${codeOf(err, "malformed")}` }]);
  }
  const l = f.volume === s.config.volume ? s.lanes[f.lane] : undefined;
  if (l === undefined || l.ledger.edges[f.holder] === undefined)
    return unchanged(s, [{ type: "count", name: "edge_release_not_ours" }]);
  if (f.epoch < s.config.topologyEpoch) return unchanged(s, [{ type: "count", name: "edge_release_stale_epoch" }]);
  return unchanged(s, [{ type: "backRelease", lane: f.lane, holder: f.holder, ranges: RangeSet.fromJSON(f.ranges) }]);
}

/** An edge frontier as far as the control log backs it: what it covers is owed to that first hop no more. */
export function applyEdgeRelease(s: WriterState, e: Ev<"release.checked">): Out {
  const l = s.lanes[e.lane];
  if (l === undefined) return unchanged(s);
  const effects: WriterEffect[] = [];
  if (e.unverified) effects.push({ type: "count", name: "edge_release_unverified" });
  if (e.ranges.isEmpty) return unchanged(s, effects);
  const ledger = ledgerReleasedAtEdge(l.ledger, e.holder, e.ranges);
  if (ledger === undefined) return unchanged(s, effects);
  let next = withLane(s, e.lane, forgetReceipted({ ...l, ledger }, e.holder, true));
  next = dropReceipted(next, e.lane, effects);
  next = wakeWaiters(next, effects);
  return { state: next, effects };
}

/** A newer term took over: protected syncs fail, the writer admits nothing more. */
export function fence(s: WriterState, e: Ev<"fence">): Out {
  const effects: WriterEffect[] = [{ type: "count", name: "fenced" }];
  const refusal = { kind: "fenced", detail: { term: s.config.term, newTerm: e.newTerm } } as const;
  const next = failWaiters({ ...s, fencedBy: e.newTerm }, refusal, effects);
  return { state: next, effects };
}

/** The writer stops: protected syncs and backpressured writes fail. */
export function stop(s: WriterState): Out {
  const effects: WriterEffect[] = [];
  const refusal = { kind: "fenced", detail: { term: s.config.term, reason: "stopped" } } as const;
  for (const w of s.waiting) effects.push({ type: "refuse", id: w.id, refusal });
  const next = failWaiters({ ...s, waiting: [], stopped: true }, refusal, effects);
  return { state: next, effects };
}
