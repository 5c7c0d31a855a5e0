import {
  initialReceiverWindow,
  receiverCurrentGrant,
  receiverNextGrant,
  receiverOnArrival,
  receiverOnReport,
  receiverOutstanding,
  type ReceiverWindow,
} from "./credit-window.ts";
import { creditSubject } from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import { creditSpec, encodeMessage } from "../../transport/protocol/index.ts";

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
  /** This holder's incarnation: grants name it, and units credited by another incarnation are refused. */
  incarnation: number;
  volume: string;
  lane: string;
  senders: readonly string[];
  space: CreditSpace;
  /** Most credit one sender may hold unused. */
  maxOutstanding: number;
}

/** Why the grantor refused a message without accounting it (the sender re-sends under a current window). */
export const CreditRefusal = {
  /** The message carries no sender session. */
  NoSession: "no_session",
  /** The message comes from an older session of its sender (a process that has since restarted). */
  StaleSenderSession: "stale_sender_session",
  /** The units were credited by another window: an earlier incarnation of this holder, or a window since replaced. */
  StaleCreditWindow: "stale_credit_window",
} as const;
export type CreditRefusal = (typeof CreditRefusal)[keyof typeof CreditRefusal];

/** What the grantor made of an arriving unit. */
export type ArrivalVerdict =
  | { readonly kind: "ok"; readonly consumed: number }
  /** Already accounted (duplicate or late delivery): it has no credit to be stored on. */
  | { readonly kind: "replayed" }
  | { readonly kind: "refused"; readonly code: CreditRefusal };

/** The credit facts a unit-subject message states in its headers (see `senderOf`). */
export interface CreditHeaders {
  readonly sentThrough: number | undefined;
  readonly session: number | undefined;
  readonly window: { readonly incarnation: number; readonly window: number } | undefined;
}

interface SenderState {
  /** The sender session the current window belongs to (undefined until the sender is heard from). */
  session: number | undefined;
  /** Current window number (0: none yet). */
  window: number;
  rx: ReceiverWindow;
}

/**
 * Per-lane grant state and publishing. One owner (the holder actor). Credits are counted per
 * window: a window belongs to one incarnation of this holder and one session of the sender, so a
 * restart on either side starts the sender over at zero instead of leaving the two cumulative
 * figures forever apart. Units sent under any other window are refused unaccounted (they were
 * never credited here); the sender learns the current window from the grant published in reply.
 */
export class CreditGrantor {
  private readonly states = new Map<string, SenderState>();
  private readonly subject: string;
  private closed = false;
  /** Grants published (diagnostics). */
  grantsSent = 0;
  /** Times a top-up found nothing grantable while a sender wanted more (backpressure). */
  withheld = 0;
  /** Credit bytes returned when a sender's window was replaced (for the owner to give back to the arena). */
  private forfeitedOnReset = 0;
  private readonly republishing = new Set<string>();

  constructor(private readonly o: CreditGrantorOptions) {
    this.subject = creditSubject(o.holder, o.volume, o.lane);
    for (const s of o.senders) this.states.set(s, { session: undefined, window: 0, rx: initialReceiverWindow });
  }

  /** True when `sender` is allowed to push this lane. */
  knows(sender: string): boolean {
    return this.states.has(sender);
  }

  /** The current window of `sender` (undefined for an unknown sender). */
  windowOf(sender: string): ReceiverWindow | undefined {
    return this.states.get(sender)?.rx;
  }

  /** Sum of unused credit across senders. */
  get outstanding(): number {
    let n = 0;
    for (const st of this.states.values()) n += receiverOutstanding(st.rx);
    return n;
  }

  /** Credit bytes freed by replaced windows since the last call (the owner returns them to its arena). */
  takeForfeited(): number {
    const n = this.forfeitedOnReset;
    this.forfeitedOnReset = 0;
    return n;
  }

  /**
   * Binds `sender`'s window to `session`: the first session heard is adopted, a newer one (the
   * sender restarted) gets a fresh window, an older one is refused.
   */
  private bindSession(sender: string, session: number | undefined): SenderState | CreditRefusal {
    const st = this.states.get(sender)!;
    if (session === undefined) return CreditRefusal.NoSession;
    if (st.session !== undefined && session < st.session) return CreditRefusal.StaleSenderSession;
    if (st.session === undefined || session > st.session) {
      this.forfeitedOnReset += receiverOutstanding(st.rx);
      st.session = session;
      st.window++;
      st.rx = initialReceiverWindow;
    }
    return st;
  }

  private sameWindow(st: SenderState, h: CreditHeaders): boolean {
    return h.window !== undefined && h.window.incarnation === this.o.incarnation && h.window.window === st.window;
  }

  /**
   * Accounts an arriving unit of `bytes` credit bytes. `ok.consumed` is the credit this arrival
   * used up in total (more than `bytes` when earlier units were lost on the wire); the caller
   * stores the unit (which consumes `bytes` in the arena) or forfeits what it did not store.
   * `replayed`: already accounted (duplicate or late), no credit to store it on. `refused`: sent
   * under another window or session, nothing accounted; the current grant is re-published so the
   * sender catches up. Throws CreditError `credit_exceeded` (nothing changes) when the sender
   * overran its grant; the unit must be refused. An unknown sender gets `ok` with nothing consumed.
   */
  onArrival(sender: string, bytes: number, h: CreditHeaders): ArrivalVerdict {
    if (!this.states.has(sender)) return { kind: "ok", consumed: 0 };
    const st = this.bindSession(sender, h.session);
    if (typeof st === "string") return { kind: "refused", code: st };
    if (!this.sameWindow(st, h)) {
      this.republishSoon(sender);
      return { kind: "refused", code: CreditRefusal.StaleCreditWindow };
    }
    const r = receiverOnArrival(st.rx, bytes, h.sentThrough);
    st.rx = r.window;
    return r.replayed ? { kind: "replayed" } : { kind: "ok", consumed: r.consumed };
  }

  /**
   * A credit request: binds the sender's session, accounts its stated total when it was sent under
   * the current window, tops up and re-sends the current grant. Returns the credit bytes the report
   * used up (units lost on the wire) for the caller to forfeit.
   */
  onRequest(sender: string, h: CreditHeaders): number {
    if (!this.states.has(sender)) return 0;
    const st = this.bindSession(sender, h.session);
    if (typeof st === "string") return 0;
    let consumed = 0;
    if (h.sentThrough !== undefined && this.sameWindow(st, h)) {
      const r = receiverOnReport(st.rx, h.sentThrough);
      st.rx = r.window;
      consumed = r.consumed;
    }
    if (!this.topUp(sender, true)) this.publish(sender);
    return consumed;
  }

  /**
   * Grants `sender` more credit when its unused credit fell to half the cap or less (so grants go
   * out per half-window, not per unit). Returns true when a grant was published. `force` skips the
   * hysteresis (used on an explicit request). Nothing is granted before the sender is heard from.
   */
  topUp(sender: string, force = false): boolean {
    const st = this.states.get(sender);
    if (st === undefined || st.session === undefined) return false;
    if (!force && receiverOutstanding(st.rx) * 2 > this.o.maxOutstanding) return false;
    if (this.closed) return false;
    const want = this.o.maxOutstanding - receiverOutstanding(st.rx);
    const promised = want > 0 ? this.o.space.grant(want) : 0;
    const r = receiverNextGrant(st.rx, promised, this.o.maxOutstanding);
    if (r.extra === 0) {
      if (want > 0) this.withheld++;
      return false;
    }
    st.rx = r.window;
    this.publish(sender);
    return true;
  }

  /** Stops promising new credit (draining/retiring); grants already made stay valid. */
  close(): void {
    this.closed = true;
  }

  /** Tops up every sender (after space was freed). */
  topUpAll(): void {
    for (const s of this.states.keys()) this.topUp(s);
  }

  /**
   * Announces this incarnation to every sender (at start): the current grant, which for a sender
   * not heard from yet names no session and grants nothing, so the sender learns the holder
   * restarted and asks for credit.
   */
  announce(): void {
    for (const s of this.states.keys()) this.publish(s);
  }

  /** Re-publishes `sender`'s grant once at the end of this turn (a whole stale frame costs one grant). */
  private republishSoon(sender: string): void {
    if (this.republishing.has(sender)) return;
    this.republishing.add(sender);
    queueMicrotask(() => {
      this.republishing.delete(sender);
      if (!this.topUp(sender, true)) this.publish(sender);
    });
  }

  /** Publishes `sender`'s current cumulative grant (re-sending it is always harmless). Returns true. */
  private publish(sender: string): boolean {
    const st = this.states.get(sender)!;
    const g = receiverCurrentGrant(st.rx);
    this.grantsSent++;
    this.o.transport.publish(
      this.subject,
      encodeMessage(creditSpec, {
        holder: this.o.holder,
        sender,
        volume: this.o.volume,
        lane: this.o.lane,
        incarnation: this.o.incarnation,
        session: st.session ?? 0,
        window: st.window,
        grantedThrough: g.grantedThrough,
        grantSeq: g.grantSeq,
      }),
    );
    return true;
  }
}
