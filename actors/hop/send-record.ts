import { RangeSet } from "../../lanes/index.ts";

/**
 * The `SendLog` and gap-repair bookkeeping of one downstream lane as plain, immutable data with
 * pure functions (for actors whose state lives in a machine context). Same rules as `SendLog` and
 * `dueResends`: a range is due again once its last send is `afterMs` old (times the receiver's
 * backoff, which doubles per re-send without a receipt, up to 16).
 */

/** Sends in time order: each entry names the ranges whose latest send happened at `at`. */
export type SendRecord = readonly { readonly at: number; readonly seqs: RangeSet }[];

/** Most a receiver's re-send wait grows to, in multiples of `afterMs`. */
export const MAX_RESEND_BACKOFF = 16;

/** Records that `first..last` was (re-)sent at `at`. */
export function recordSend(log: SendRecord, first: number, last: number, at: number): SendRecord {
  const seqs = RangeSet.of(first, last);
  const tail = log[log.length - 1];
  if (tail !== undefined && tail.at === at) return [...log.slice(0, -1), { at, seqs: tail.seqs.union(seqs) }];
  return [...log, { at, seqs }];
}

/** Sequences of `pending` that are due: never sent, or last sent at or before `now - afterMs`. */
export function dueInRecord(log: SendRecord, pending: RangeSet, now: number, afterMs: number): RangeSet {
  let recent = RangeSet.EMPTY;
  for (let i = log.length - 1; i >= 0; i--) {
    const e = log[i]!;
    if (e.at <= now - afterMs) break;
    recent = recent.union(e.seqs);
  }
  return pending.subtract(recent);
}

/** Forgets sequences that no longer need tracking (receipted or dropped). */
export function forgetInRecord(log: SendRecord, seqs: RangeSet): SendRecord {
  if (seqs.isEmpty || log.length === 0) return log;
  const kept: { at: number; seqs: RangeSet }[] = [];
  for (const e of log) {
    const rest = e.seqs.intersects(seqs) ? e.seqs.subtract(seqs) : e.seqs;
    if (!rest.isEmpty) kept.push({ at: e.at, seqs: rest });
  }
  return kept;
}

/** The next backoff multiple after a re-send that brought no receipt yet. */
export function nextResendBackoff(backoff: number | undefined): number {
  return Math.min(MAX_RESEND_BACKOFF, (backoff ?? 1) * 2);
}
