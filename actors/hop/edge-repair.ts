import type { RangeSet } from "../../lanes/index.ts";
import { SendLog } from "./send-log.ts";
import type { CreditSender } from "./credit-sender.ts";
import type { LaneObligations } from "./lane-obligations.ts";

/**
 * Gap repair toward downstream receivers, shared by holders (toward their edges) and the volume
 * writer (toward its first hops). NATS delivers at most once and a receiver may restart empty, so
 * custody must not depend on any one publish arriving: a sender knows, per receiver incarnation,
 * what that receiver has receipted (`LaneObligations`), and re-sends in order what it still
 * retains and the receiver has not receipted, once the last send of it is `afterMs` old — or at
 * once after the receiver restarted. Every re-send goes through the receiver's own credits, and a
 * duplicate is harmless at the receiver.
 */

/** One lane's downstream side: the senders per receiver, what each receipted, and when each range was last sent. */
export interface DownstreamLane {
  readonly edges: ReadonlyMap<string, CreditSender>;
  readonly obligations: LaneObligations;
  readonly sendLogs: Map<string, SendLog>;
  /**
   * Per receiver: how many times `afterMs` to wait; doubles while re-sends bring no receipt (a receiver refusing them
   * is not flooded).
   */
  readonly resendBackoff: Map<string, number>;
}

/** Most a receiver's re-send wait grows to, in multiples of `afterMs`. */
const MAX_BACKOFF = 16;

/** Per receiver: the retained sequences that are due to be sent again. */
export interface DueResend {
  readonly edge: string;
  readonly sender: CreditSender;
  readonly seqs: RangeSet;
}

/**
 * The ranges each receiver should get again now. A receiver whose sender still has units queued
 * (waiting for its credit) is skipped: those are not lost, and re-queuing would only grow the queue.
 */
export function dueResends(lane: DownstreamLane, now: number, afterMs: number): DueResend[] {
  const out: DueResend[] = [];
  for (const [edge, sender] of lane.edges) {
    if (sender.backlog.units > 0) continue;
    const pending = lane.obligations.pendingFor(edge);
    if (pending.isEmpty) continue;
    const log = lane.sendLogs.get(edge);
    const seqs = log === undefined ? pending : log.due(pending, now, afterMs * (lane.resendBackoff.get(edge) ?? 1));
    if (!seqs.isEmpty) out.push({ edge, sender, seqs });
  }
  return out;
}

/** Notes that due units were re-sent to `edge`: the next re-send waits twice as long unless a receipt comes first. */
export function noteResent(lane: DownstreamLane, edge: string): void {
  lane.resendBackoff.set(edge, Math.min(MAX_BACKOFF, (lane.resendBackoff.get(edge) ?? 1) * 2));
}

/** Notes a (re-)send of `first..last` to `edge` at `now`. */
export function noteSent(lane: DownstreamLane, edge: string, first: number, last: number, now: number): void {
  let log = lane.sendLogs.get(edge);
  if (log === undefined) {
    log = new SendLog();
    lane.sendLogs.set(edge, log);
  }
  log.note(first, last, now);
}

/**
 * The receiver `edge` started us over: as a new incarnation (it lost what it held in RAM, so
 * nothing it receipted counts), or with a new credit window (what we sent before was never
 * credited there). Either way every retained unit it has not receipted is due at once.
 */
export function receiverReset(
  lane: DownstreamLane,
  edge: string,
  e: { readonly incarnation: number; readonly restarted: boolean },
): void {
  if (e.restarted) lane.obligations.restartEdge(edge, e.incarnation);
  lane.sendLogs.get(edge)?.reset();
  lane.resendBackoff.delete(edge);
}

/**
 * A receipt from `edge` arrived: drops send records of what it receipted (keeps the logs as small as
 * what is outstanding) and, when it brought anything new, ends the re-send backoff.
 */
export function forgetReceipted(lane: DownstreamLane, edge: string, progressed = true): void {
  lane.sendLogs.get(edge)?.forget(lane.obligations.receiptedBy(edge));
  if (progressed) lane.resendBackoff.delete(edge);
}
