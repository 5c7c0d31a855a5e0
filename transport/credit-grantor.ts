import {
  initialReceiverWindow,
  receiverCurrentGrant,
  receiverNextGrant,
  receiverOnArrival,
  receiverOnReport,
  receiverOutstanding,
  type ReceiverWindow,
} from "./credit-window.ts";
import { creditSubject } from "./subjects.ts";
import type { Transport } from "./transport.ts";
import { creditSpec, encodeMessage } from "./wire/index.ts";

/**
 * The receiving half of the credit protocol for one lane of one holder: one window per upstream
 * sender. It decides nothing about memory — `space` tells it what the arena can still promise and
 * is told what was promised and what arrived — it only keeps the cumulative figures straight and
 * publishes grants on `custody.v1.credit.<holder>.<volume>.<lane>`.
 */

/** The arena side of credits: how much may still be promised, and bookkeeping of promises. */
export interface CreditSpace {
  /** Bytes that may still be granted (free admitted space − outstanding credits − reserve). */
  grantable(): number;
  /** `bytes` of new credit were promised: keep room for them. */
  reserve(bytes: number): void;
  /** `bytes` of promised credit were used up (arrived, or lost on the wire): stop keeping room. */
  consume(bytes: number): void;
}

export interface CreditGrantorOptions {
  transport: Transport;
  holder: string;
  volume: string;
  lane: string;
  senders: readonly string[];
  space: CreditSpace;
  /** Most credit one sender may hold unused. */
  maxOutstanding: number;
}

/** Per-lane grant state and publishing. One owner (the holder actor). */
export class CreditGrantor {
  private readonly windows = new Map<string, ReceiverWindow>();
  private readonly subject: string;
  /** Grants published (diagnostics). */
  grantsSent = 0;
  /** Times a top-up found nothing grantable while a sender wanted more (backpressure). */
  withheld = 0;

  constructor(private readonly o: CreditGrantorOptions) {
    this.subject = creditSubject(o.holder, o.volume, o.lane);
    for (const s of o.senders) this.windows.set(s, initialReceiverWindow);
  }

  /** True when `sender` is allowed to push this lane. */
  knows(sender: string): boolean {
    return this.windows.has(sender);
  }

  /** The window of `sender` (undefined for an unknown sender). */
  windowOf(sender: string): ReceiverWindow | undefined {
    return this.windows.get(sender);
  }

  /** Sum of unused credit across senders. */
  get outstanding(): number {
    let n = 0;
    for (const w of this.windows.values()) n += receiverOutstanding(w);
    return n;
  }

  /**
   * Accounts an arriving unit. Throws CreditError `credit_exceeded` (nothing changes) when the
   * sender overran its grant; the caller must then refuse the unit.
   */
  onArrival(sender: string, bytes: number, sentThrough: number | undefined): void {
    const w = this.windows.get(sender);
    if (w === undefined) return;
    const r = receiverOnArrival(w, bytes, sentThrough);
    this.windows.set(sender, r.window);
    if (r.consumed > 0) this.o.space.consume(r.consumed);
  }

  /** A credit request: account the sender's report, top up, and re-send the current grant. */
  onRequest(sender: string, sentThrough: number | undefined): void {
    const w = this.windows.get(sender);
    if (w === undefined) return;
    if (sentThrough !== undefined) {
      const r = receiverOnReport(w, sentThrough);
      this.windows.set(sender, r.window);
      if (r.consumed > 0) this.o.space.consume(r.consumed);
    }
    if (!this.topUp(sender, true)) this.publish(sender);
  }

  /**
   * Grants `sender` more credit when its unused credit fell to half the cap or less (so grants go
   * out per half-window, not per unit). Returns true when a grant was published. `force` skips the
   * hysteresis (used on an explicit request).
   */
  topUp(sender: string, force = false): boolean {
    const w = this.windows.get(sender);
    if (w === undefined) return false;
    if (!force && receiverOutstanding(w) * 2 > this.o.maxOutstanding) return false;
    const r = receiverNextGrant(w, this.o.space.grantable(), this.o.maxOutstanding);
    if (r.extra === 0) {
      if (receiverOutstanding(w) < this.o.maxOutstanding) this.withheld++;
      return false;
    }
    this.o.space.reserve(r.extra);
    this.windows.set(sender, r.window);
    this.publish(sender);
    return true;
  }

  /** Tops up every sender (after space was freed). */
  topUpAll(): void {
    for (const s of this.windows.keys()) this.topUp(s);
  }

  /** Publishes `sender`'s current cumulative grant (re-sending it is always harmless). */
  private publish(sender: string): void {
    const w = this.windows.get(sender)!;
    const g = receiverCurrentGrant(w);
    this.grantsSent++;
    this.o.transport.publish(
      this.subject,
      encodeMessage(creditSpec, { holder: this.o.holder, sender, volume: this.o.volume, lane: this.o.lane, grantedThrough: g.grantedThrough, grantSeq: g.grantSeq }),
    );
  }
}
