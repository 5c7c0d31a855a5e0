import {
  initialReceiverWindow,
  receiverCurrentGrant,
  receiverNextGrant,
  receiverOnArrival,
  receiverOnReport,
  receiverOutstanding,
  type ReceiverWindow,
} from "./credit-window.ts";
import { CreditRefusal, type ArrivalVerdict, type CreditHeaders } from "./credit-grantor.ts";
import { creditSubject, type WireCredit } from "../../transport/protocol/index.ts";

/**
 * The receiving half of the credit protocol for one lane, as plain data and pure functions: the
 * same rules as `CreditGrantor` (credit-grantor.ts), for an owner that keeps its state in a
 * statechart's context and publishes the grants these functions return. Nothing here publishes,
 * schedules or reads the clock; every function returns a new state and leaves its input unchanged.
 */

/** One upstream sender's window on the lane. */
export interface GrantorSender {
  /** The sender session the current window belongs to (undefined until the sender is heard from). */
  readonly session: number | undefined;
  /** Current window number (0: none yet). */
  readonly window: number;
  readonly rx: ReceiverWindow;
}

/** The grant state of one lane of one holder: one window per allowed sender. */
export interface GrantorLane {
  readonly holder: string;
  /** This holder's incarnation: grants name it, and units credited by another incarnation are refused. */
  readonly incarnation: number;
  readonly volume: string;
  readonly lane: string;
  /** Most credit one sender may hold unused. */
  readonly maxOutstanding: number;
  /** True once the holder stopped promising new credit (grants already made stay valid). */
  readonly closed: boolean;
  readonly senders: Readonly<Record<string, GrantorSender>>;
}

export const initialGrantorSender: GrantorSender = { session: undefined, window: 0, rx: initialReceiverWindow };

export function initialGrantorLane(o: {
  holder: string;
  incarnation: number;
  volume: string;
  lane: string;
  senders: readonly string[];
  maxOutstanding: number;
}): GrantorLane {
  const senders = Object.fromEntries(o.senders.map((s) => [s, initialGrantorSender]));
  const { holder, incarnation, volume, lane, maxOutstanding } = o;
  return { holder, incarnation, volume, lane, maxOutstanding, closed: false, senders };
}

/** True when `sender` is allowed to push this lane. */
export function grantorKnows(g: GrantorLane, sender: string): boolean {
  return Object.hasOwn(g.senders, sender);
}

/** The subject grants of this lane go out on. */
export function grantSubject(g: GrantorLane): string {
  return creditSubject(g.holder, g.volume, g.lane);
}

/** `sender`'s current cumulative grant as the `credit` message body (re-sending it is always harmless). */
export function grantBody(g: GrantorLane, sender: string): WireCredit {
  const st = g.senders[sender]!;
  const { grantedThrough, grantSeq } = receiverCurrentGrant(st.rx);
  const { holder, volume, lane, incarnation } = g;
  return {
    holder,
    sender,
    volume,
    lane,
    incarnation,
    session: st.session ?? 0,
    window: st.window,
    grantedThrough,
    grantSeq,
  };
}

/** Every sender's current grant: what a holder announces at start (the senders learn it restarted). */
export function grantorAnnounce(g: GrantorLane): WireCredit[] {
  return Object.keys(g.senders).map((s) => grantBody(g, s));
}

/** Stops promising new credit (draining/retiring/stopping); grants already made stay valid. */
export function closeGrantor(g: GrantorLane): GrantorLane {
  return g.closed ? g : { ...g, closed: true };
}

function withSender(g: GrantorLane, sender: string, st: GrantorSender): GrantorLane {
  return st === g.senders[sender] ? g : { ...g, senders: { ...g.senders, [sender]: st } };
}

/**
 * Binds a sender's window to `session`: the first session heard is adopted, a newer one (the
 * sender restarted) gets a fresh window and forfeits the old window's unused credit, an older one
 * is refused.
 */
export function bindSenderSession(
  st: GrantorSender,
  session: number | undefined,
): { sender: GrantorSender; forfeited: number } | CreditRefusal {
  if (session === undefined) return CreditRefusal.NoSession;
  if (st.session !== undefined && session < st.session) return CreditRefusal.StaleSenderSession;
  if (st.session === session) return { sender: st, forfeited: 0 };
  return {
    sender: { session, window: st.window + 1, rx: initialReceiverWindow },
    forfeited: receiverOutstanding(st.rx),
  };
}

function isCurrentWindow(g: GrantorLane, st: GrantorSender, h: CreditHeaders): boolean {
  return h.window !== undefined && h.window.incarnation === g.incarnation && h.window.window === st.window;
}

/**
 * Accounts an arriving unit of `bytes` credit bytes (CreditGrantor.onArrival). `republish`: the
 * unit came under another window, so the owner should re-send the sender's current grant (once per
 * batch). Throws CreditError `credit_exceeded` (nothing changes) when the sender overran its grant.
 * An unknown sender gets `ok` with nothing consumed.
 */
export function grantorArrival(
  g: GrantorLane,
  sender: string,
  bytes: number,
  h: CreditHeaders,
): { lane: GrantorLane; verdict: ArrivalVerdict; republish: boolean } {
  if (!grantorKnows(g, sender)) return { lane: g, verdict: { kind: "ok", consumed: 0 }, republish: false };
  const bound = bindSenderSession(g.senders[sender]!, h.session);
  if (typeof bound === "string") return { lane: g, verdict: { kind: "refused", code: bound }, republish: false };
  if (!isCurrentWindow(g, bound.sender, h)) {
    const verdict = { kind: "refused", code: CreditRefusal.StaleCreditWindow } as const;
    return { lane: withSender(g, sender, bound.sender), verdict, republish: true };
  }
  const r = receiverOnArrival(bound.sender.rx, bytes, h.sentThrough);
  const lane = withSender(g, sender, { ...bound.sender, rx: r.window });
  return { lane, verdict: r.replayed ? { kind: "replayed" } : { kind: "ok", consumed: r.consumed }, republish: false };
}

/**
 * Grants `sender` more credit when its unused credit fell to half the cap or less (`force` skips
 * that hysteresis). `grantable`: what the holder's space can still promise (default: no limit).
 * `grant` is the body to publish, absent when nothing was granted; `withheld` when the sender
 * wanted more and nothing could be promised (backpressure).
 */
export function grantorTopUp(
  g: GrantorLane,
  sender: string,
  o: { force?: boolean; grantable?: number } = {},
): { lane: GrantorLane; grant?: WireCredit; withheld: boolean } {
  const st = g.senders[sender];
  if (!grantorKnows(g, sender) || st === undefined || st.session === undefined) return { lane: g, withheld: false };
  if (!o.force && receiverOutstanding(st.rx) * 2 > g.maxOutstanding) return { lane: g, withheld: false };
  if (g.closed) return { lane: g, withheld: false };
  const want = g.maxOutstanding - receiverOutstanding(st.rx);
  const promised = want > 0 ? Math.min(want, o.grantable ?? want) : 0;
  const r = receiverNextGrant(st.rx, promised, g.maxOutstanding);
  if (r.extra === 0) return { lane: g, withheld: want > 0 };
  const lane = withSender(g, sender, { ...st, rx: r.window });
  return { lane, grant: grantBody(lane, sender), withheld: false };
}

/** A forced top-up, or else the current grant re-sent: the answer to a request or a stale window. */
export function grantorRegrant(
  g: GrantorLane,
  sender: string,
  grantable?: number,
): { lane: GrantorLane; grant: WireCredit; withheld: boolean } {
  const r = grantorTopUp(g, sender, grantable === undefined ? { force: true } : { force: true, grantable });
  return { lane: r.lane, grant: r.grant ?? grantBody(r.lane, sender), withheld: r.withheld };
}

/**
 * A credit request (CreditGrantor.onRequest): binds the sender's session, accounts its stated total
 * when sent under the current window, then tops up or re-sends the current grant. `consumed`: the
 * credit bytes the report used up (units lost on the wire). An unknown sender or a refused session
 * changes nothing and gets no grant.
 */
export function grantorRequest(
  g: GrantorLane,
  sender: string,
  h: CreditHeaders,
  grantable?: number,
): { lane: GrantorLane; consumed: number; grant?: WireCredit; withheld: boolean } {
  if (!grantorKnows(g, sender)) return { lane: g, consumed: 0, withheld: false };
  const bound = bindSenderSession(g.senders[sender]!, h.session);
  if (typeof bound === "string") return { lane: g, consumed: 0, withheld: false };
  let st = bound.sender;
  let consumed = 0;
  if (h.sentThrough !== undefined && isCurrentWindow(g, st, h)) {
    const r = receiverOnReport(st.rx, h.sentThrough);
    st = { ...st, rx: r.window };
    consumed = r.consumed;
  }
  return { consumed, ...grantorRegrant(withSender(g, sender, st), sender, grantable) };
}
