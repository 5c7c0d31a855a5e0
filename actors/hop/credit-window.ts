import { CustodyError } from "../../core/index.ts";

/**
 * The ingress credit protocol, pure half. Credits are counted in payload bytes and are CUMULATIVE:
 * a grant says "you may have sent `grantedThrough` bytes in total on this lane", never "here are N
 * more bytes". A lost grant is repaired by the next one, a duplicated or reordered (older) grant is
 * ignored because it cannot lower the cumulative figure. The sender likewise states its cumulative
 * `sentThrough`, so a unit lost on the wire still consumes its credit at the receiver once a later
 * unit (or credit request) reports the sender's total, and the window cannot leak.
 */

/** Why a credit operation was refused. */
export const CreditErrorCode = {
  /** The sender tried to send (or a receiver saw) more bytes than granted. */
  CreditExceeded: "credit_exceeded",
  /** A byte count or grant figure that is not a non-negative safe integer. */
  InvalidCredit: "invalid_credit",
} as const;
export type CreditErrorCode = (typeof CreditErrorCode)[keyof typeof CreditErrorCode];

/** Typed refusal of the credit protocol; `detail` names the figures involved. */
export class CreditError extends CustodyError {
  constructor(code: CreditErrorCode, message: string, detail: Record<string, unknown> = {}) {
    super(code, message, detail);
  }
}

function checkBytes(name: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new CreditError(CreditErrorCode.InvalidCredit, `${name} must be a non-negative safe integer, got ${n}`, {
      [name]: n,
    });
  }
}

/** A grant as carried by the `credit` wire message (only the figures the window needs). */
export interface CreditGrant {
  readonly grantedThrough: number;
  readonly grantSeq: number;
}

/** Sender-side window state: immutable, replaced on every change. */
export interface SenderWindow {
  /** Cumulative payload bytes sent on this lane to this receiver. */
  readonly sentThrough: number;
  /** Highest cumulative grant seen. Invariant: sentThrough <= grantedThrough. */
  readonly grantedThrough: number;
  /** grantSeq of the grant that set `grantedThrough` (for diagnostics only). */
  readonly grantSeq: number;
}

/** A sender that has been granted nothing yet. */
export const initialSenderWindow: SenderWindow = { sentThrough: 0, grantedThrough: 0, grantSeq: 0 };

/** Bytes the sender may still send right now (never negative). */
export function senderAvailable(w: SenderWindow): number {
  return w.grantedThrough - w.sentThrough;
}

/** True when a unit of `bytes` payload bytes fits in the granted window. */
export function senderCanSend(w: SenderWindow, bytes: number): boolean {
  checkBytes("bytes", bytes);
  return w.sentThrough + bytes <= w.grantedThrough;
}

/**
 * Records a send of `bytes`. Guarantees `sentThrough <= grantedThrough` afterwards; throws
 * CreditError `credit_exceeded` (state unchanged) when the unit does not fit.
 */
export function senderRecordSend(w: SenderWindow, bytes: number): SenderWindow {
  if (!senderCanSend(w, bytes)) {
    throw new CreditError(CreditErrorCode.CreditExceeded, `send of ${bytes} bytes exceeds the granted window`, {
      bytes,
      sentThrough: w.sentThrough,
      grantedThrough: w.grantedThrough,
    });
  }
  return { ...w, sentThrough: w.sentThrough + bytes };
}

/**
 * Applies a grant. Monotonic: a grant at or below the current figure (lost-then-resent, duplicated
 * or reordered) leaves the window unchanged. Throws `invalid_credit` on a malformed figure.
 */
export function senderApplyGrant(w: SenderWindow, g: CreditGrant): SenderWindow {
  checkBytes("grantedThrough", g.grantedThrough);
  checkBytes("grantSeq", g.grantSeq);
  if (g.grantedThrough <= w.grantedThrough) return w;
  return { ...w, grantedThrough: g.grantedThrough, grantSeq: g.grantSeq };
}

/** Receiver-side window state for one sender on one lane. */
export interface ReceiverWindow {
  /** Cumulative bytes the sender is known to have sent (received, or reported as sent). */
  readonly consumedThrough: number;
  /** Cumulative grant issued so far. Invariant: consumedThrough <= grantedThrough. */
  readonly grantedThrough: number;
  /** Sequence number of the last grant issued (increases by one per issued grant). */
  readonly grantSeq: number;
}

/** A receiver that has granted nothing yet. */
export const initialReceiverWindow: ReceiverWindow = { consumedThrough: 0, grantedThrough: 0, grantSeq: 0 };

/** Credits granted but not yet consumed by arrivals: the bytes the receiver must keep room for. */
export function receiverOutstanding(w: ReceiverWindow): number {
  return w.grantedThrough - w.consumedThrough;
}

/**
 * Accounts an arriving unit of `bytes`. `sentThrough` is the sender's own cumulative figure
 * INCLUDING this unit (carried in the unit's headers); when it is ahead of our count, the
 * difference was lost on the wire and its credit is consumed too. Throws `credit_exceeded`
 * (state unchanged) when the sender went beyond its grant — the unit must then be rejected.
 * Returns the new window, how many outstanding credit bytes this arrival consumed, and `replayed`
 * when the unit's bytes were already accounted (duplicate or late delivery: consumes nothing).
 */
export function receiverOnArrival(
  w: ReceiverWindow,
  bytes: number,
  sentThrough?: number,
): { window: ReceiverWindow; consumed: number; replayed: boolean } {
  checkBytes("bytes", bytes);
  if (sentThrough !== undefined) checkBytes("sentThrough", sentThrough);
  // Already accounted: a duplicate delivery, or a late one whose credit a later unit's report
  // already consumed. It uses no credit; the caller must not store it on credit it does not have.
  if (sentThrough !== undefined && bytes > 0 && sentThrough <= w.consumedThrough)
    return { window: w, consumed: 0, replayed: true };
  const counted = w.consumedThrough + bytes;
  // A stale (reordered) sentThrough below our count is ignored; our count is then authoritative.
  const next = sentThrough !== undefined && sentThrough > counted ? sentThrough : counted;
  if (next > w.grantedThrough) {
    throw new CreditError(CreditErrorCode.CreditExceeded, `sender exceeded its grant: ${next} > ${w.grantedThrough}`, {
      bytes,
      sentThrough: next,
      grantedThrough: w.grantedThrough,
    });
  }
  return { window: { ...w, consumedThrough: next }, consumed: next - w.consumedThrough, replayed: false };
}

/**
 * Accounts a sender's report of its cumulative `sentThrough` with no unit attached (a credit
 * request). Never lowers the count; a figure above the grant is clamped (it cannot be admitted,
 * and the units that would carry it will be refused on arrival).
 */
export function receiverOnReport(w: ReceiverWindow, sentThrough: number): { window: ReceiverWindow; consumed: number } {
  checkBytes("sentThrough", sentThrough);
  const next = Math.min(Math.max(w.consumedThrough, sentThrough), w.grantedThrough);
  return { window: { ...w, consumedThrough: next }, consumed: next - w.consumedThrough };
}

/**
 * Computes the next grant. `grantableBytes` is what the arena can still promise (admitted free
 * space minus every outstanding credit minus its reserve); `maxOutstanding` caps how far ahead of
 * arrivals one sender may run. Returns the extra bytes granted (0 = withhold: nothing to send) and
 * the new window; the caller must reserve `extra` bytes in the arena before publishing the grant.
 */
export function receiverNextGrant(
  w: ReceiverWindow,
  grantableBytes: number,
  maxOutstanding: number,
): { window: ReceiverWindow; extra: number } {
  checkBytes("grantableBytes", grantableBytes);
  checkBytes("maxOutstanding", maxOutstanding);
  const room = Math.max(0, maxOutstanding - receiverOutstanding(w));
  const extra = Math.min(room, grantableBytes);
  if (extra === 0) return { window: w, extra: 0 };
  return { window: { ...w, grantedThrough: w.grantedThrough + extra, grantSeq: w.grantSeq + 1 }, extra };
}

/** The current grant as it goes on the wire (re-sending it is always harmless). */
export function receiverCurrentGrant(w: ReceiverWindow): CreditGrant {
  return { grantedThrough: w.grantedThrough, grantSeq: w.grantSeq };
}
