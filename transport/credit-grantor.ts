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
 * sender. It decides nothing about memory — `space` (the arena) says how much it can promise — it
 * only keeps the cumulative figures straight and publishes grants on `custody.v1.credit.<holder>.<volume>.<lane>`.
 */

/**
 * The arena side of credits. Credit bytes are whatever the arena consumes per unit (its stored
 * record size), so sender, grantor and arena count the same figure.
 */
export interface CreditSpace {
  /**
   * Promises up to `requested` more bytes to this lane and returns how many were promised (0 =
   * withhold). Never promises space that admitted capacity cannot land.
   */
  grant(requested: number): number;
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
  private closed = false;
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
   * Accounts an arriving unit of `bytes` credit bytes. Returns the credit bytes this arrival used
   * up in total (more than `bytes` when earlier units were lost on the wire); the caller stores the
   * unit (which consumes `bytes` in the arena) or forfeits what it did not store. `replayed` means
   * the unit was already accounted (duplicate or late): it has no credit to be stored on. Throws CreditError
   * `credit_exceeded` (nothing changes) when the sender overran its grant; the unit must be refused.
   */
  onArrival(sender: string, bytes: number, sentThrough: number | undefined): { consumed: number; replayed: boolean } {
    const w = this.windows.get(sender);
    if (w === undefined) return { consumed: 0, replayed: false };
    const r = receiverOnArrival(w, bytes, sentThrough);
    this.windows.set(sender, r.window);
    return { consumed: r.consumed, replayed: r.replayed };
  }

  /**
   * A credit request: accounts the sender's stated total, tops up, and re-sends the current grant.
   * Returns the credit bytes the report used up (units lost on the wire) for the caller to forfeit.
   */
  onRequest(sender: string, sentThrough: number | undefined): number {
    const w = this.windows.get(sender);
    if (w === undefined) return 0;
    let consumed = 0;
    if (sentThrough !== undefined) {
      const r = receiverOnReport(w, sentThrough);
      this.windows.set(sender, r.window);
      consumed = r.consumed;
    }
    if (!this.topUp(sender, true)) this.publish(sender);
    return consumed;
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
    if (this.closed) return false;
    const want = this.o.maxOutstanding - receiverOutstanding(w);
    const promised = want > 0 ? this.o.space.grant(want) : 0;
    const r = receiverNextGrant(w, promised, this.o.maxOutstanding);
    if (r.extra === 0) {
      if (want > 0) this.withheld++;
      return false;
    }
    this.windows.set(sender, r.window);
    this.publish(sender);
    return true;
  }

  /** Stops promising new credit (draining/retiring); grants already made stay valid. */
  close(): void {
    this.closed = true;
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
