import type { Clock } from "../../core/index.ts";
import {
  initialSenderWindow,
  senderApplyGrant,
  CreditError,
  CreditErrorCode,
  senderAvailable,
  senderRecordSend,
  type SenderWindow,
} from "./credit-window.ts";
import { creditSubject, unitSubject } from "../../transport/protocol/index.ts";
import type { MessageHeaders, Transport, TransportSubscription } from "../../transport/index.ts";
import {
  CREDIT_WINDOW_HEADER,
  creditWindowTag,
  encodeUnitRun,
  SENDER_HEADER,
  SENT_THROUGH_HEADER,
  SESSION_HEADER,
  UNIT_ATTESTATION_HEADER,
} from "../../transport/index.ts";
import { CustodyError } from "../../core/index.ts";
import {
  creditRequestSpec,
  creditSpec,
  decodeMessage,
  encodeMessage,
  type WireCredit,
} from "../../transport/protocol/index.ts";

/**
 * The sending half of the credit protocol for one edge (sender → holder, one lane). Units are
 * queued in order and published only while they fit in the cumulative grant, so bytes in flight
 * never exceed what the holder admitted; nothing is ever dropped — a blocked sender just queues
 * (its caller keeps the memory bounded, e.g. a holder's arena withholds ITS upstream credits).
 * Every message carries the sender's id and cumulative `sentThrough` in headers, so the receiver
 * can account units lost on the wire.
 *
 * Sending happens at the end of the current turn (a microtask, so no timer and no added delay):
 * units queued in the same turn — a burst, a backlog released by a grant, the units a holder
 * admitted from one socket read — leave together as one `unit-frame` of up to `maxFrameBytes`,
 * which spreads the per-message cost of NATS over many units. One unit alone goes as a bare
 * `unit` message, exactly as encoded.
 */

export { SENDER_HEADER, SENT_THROUGH_HEADER, SESSION_HEADER, CREDIT_WINDOW_HEADER };

/** A unit waiting for credit: its encoded `unit` message and payload size (the credited bytes). */
export interface QueuedUnit {
  readonly data: Uint8Array;
  readonly bytes: number;
  readonly headers?: MessageHeaders;
  /** Called right after the unit is handed to the transport (never a receipt). */
  readonly onSent?: () => void;
  /**
   * Asked when the unit reaches the head of the queue, before it takes credit: false drops it
   * unsent (its `onSent` is not called). The one who queued it no longer needs it delivered, e.g.
   * custody of it ended while it waited for credit.
   */
  readonly wanted?: () => boolean;
  /**
   * The writer's attestation token covering this unit: set by a forwarding holder (it passes on
   * what it verified) or by this sender's `attest` signer just before the unit goes out.
   */
  attestation?: string;
}

/** Signs units as the writer: one token per unit, shared by the units one signature covers. */
export interface UnitAttester {
  /** Most units handed to one `sign` call (one signature). */
  readonly maxUnits: number;
  sign(units: readonly Uint8Array[]): readonly string[];
}

/** Default largest frame: a socket read or so (64 KiB), well under NATS' default 1 MiB max_payload. */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024;
/** Default most units per frame. */
export const DEFAULT_MAX_FRAME_UNITS = 256;

export interface CreditSenderOptions {
  transport: Transport;
  clock: Clock;
  /** Our identity as the receiver sees it (the `sender` of credit messages). */
  sender: string;
  /** The receiving holder. */
  holder: string;
  volume: string;
  lane: string;
  /** How long a blocked sender waits before asking again (a request or grant may be lost). */
  retryMs?: number;
  /** Largest frame in encoded unit bytes (a single larger unit still goes, alone). Default 64 KiB. */
  maxFrameBytes?: number;
  /** Most units per frame; 1 turns framing off. Default 256. */
  maxFrameUnits?: number;
  /**
   * Our session: our incarnation (a holder) or term (a writer). A restarted sender must use a
   * higher one, so the holder starts it over at zero instead of mistaking it for the old process.
   * Default 1.
   */
  session?: number;
  /**
   * Called when the receiver started us over: a new incarnation of it (it restarted and lost what
   * it had not made durable) or a new window. Units sent before were not credited there; the owner
   * re-queues what that receiver has not receipted.
   */
  onReset?: (e: { readonly incarnation: number; readonly window: number; readonly restarted: boolean }) => void;
  /** Called with the error code of a grant that could not be read (the owner counts it). */
  onMalformed?: (code: string) => void;
  /**
   * Whether a grant from receiver incarnation `incarnation` (newer than the one our window belongs
   * to) may count. A sender whose peer directory follows the control log believes only an
   * incarnation the log admitted: a grant from an unadmitted one would start our window over under
   * an incarnation that counts for nothing, and one from a made-up future incarnation would leave
   * every real grant looking stale. Unset: every newer incarnation counts.
   */
  believes?: (incarnation: number) => boolean;
  /** Called with the code of a grant that was read but refused (a GrantRefusal); the owner counts it. */
  onRefused?: (code: GrantRefusal) => void;
  /**
   * The writer's unit signer: queued units without an attestation are signed in batches of up to
   * `maxUnits` just before they go out (unset: units go unsigned, or with the attestation they came with).
   */
  attest?: UnitAttester;
}

/** Why a readable grant was refused. */
export const GrantRefusal = {
  /**
   * The grant names another holder, volume or lane than the credit subject it came on (the subject is the holder's
   * own).
   */
  wrongSubject: "wrong_subject",
  /** The grant is from a receiver incarnation the control log has not admitted. */
  unadmittedIncarnation: "unadmitted_incarnation",
} as const;
export type GrantRefusal = (typeof GrantRefusal)[keyof typeof GrantRefusal];

/** Sender-side credit endpoint for one (holder, volume, lane). Not thread-safe; one owner. */
export class CreditSender {
  private window: SenderWindow = initialSenderWindow;
  /** The receiver incarnation our window belongs to (-1: not heard from). */
  private receiverIncarnation = -1;
  /** The receiver's window number for us (0: none granted yet). */
  private windowId = 0;
  readonly session: number;
  /** FIFO of waiting units; `head` indexes the oldest (no O(n) shift per send). */
  private queue: QueuedUnit[] = [];
  private head = 0;
  private queuedBytes = 0;
  private pumpScheduled = false;
  private retryTimer: unknown;
  private sub: TransportSubscription | undefined;
  private closed = false;
  private readonly maxFrameBytes: number;
  private readonly maxFrameUnits: number;
  readonly subject: string;
  /** Number of credit requests sent (diagnostics). */
  requests = 0;
  /** Messages published and units they carried (diagnostics: units / messages is the framing factor). */
  messagesSent = 0;
  unitsSent = 0;
  /** Units dropped unsent because their `wanted` said no. */
  unitsSkipped = 0;

  constructor(private readonly o: CreditSenderOptions) {
    this.subject = unitSubject(o.holder, o.volume, o.lane);
    this.session = o.session ?? 1;
    this.maxFrameBytes = o.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.maxFrameUnits = Math.max(1, Math.floor(o.maxFrameUnits ?? DEFAULT_MAX_FRAME_UNITS));
  }

  /**
   * Subscribes to the holder's grants itself and asks for initial credit. Use this when nothing
   * else owns inbound events (a volume writer, a test); an actor instead routes grants to `onGrant`.
   */
  attach(): this {
    this.sub = this.o.transport.subscribe(creditSubject(this.o.holder, this.o.volume, this.o.lane), (m) => {
      try {
        this.onGrant(decodeMessage(creditSpec, m.data));
      } catch (err) {
        // A malformed grant changes nothing (grants are absolute, the next good one repairs the
        // window), but its owner counts it.
        this.o.onMalformed?.(err instanceof CustodyError ? err.code : "malformed");
      }
    });
    this.requestCredit();
    return this;
  }

  /** The credit subject a router should subscribe to for this edge's grants. */
  get creditSubject(): string {
    return creditSubject(this.o.holder, this.o.volume, this.o.lane);
  }

  /** Current window (cumulative figures). */
  get state(): SenderWindow {
    return this.window;
  }

  /** Units and bytes waiting for credit (or for the end of the turn). */
  get backlog(): { units: number; bytes: number } {
    return { units: this.queue.length - this.head, bytes: this.queuedBytes };
  }

  /** The receiver incarnation and window our credit belongs to (-1/0 before the first grant). */
  get creditWindow(): { readonly incarnation: number; readonly window: number } {
    return { incarnation: this.receiverIncarnation, window: this.windowId };
  }

  /**
   * Applies a grant addressed to us (others' grants on the same subject are ignored; one naming
   * another holder, volume or lane than the subject, or an incarnation we do not believe, is
   * refused through `onRefused`), then sends what fits. A grant from a newer incarnation of the receiver, or for a new
   * window, starts our
   * figures over (and tells the owner through `onReset`); grants of older incarnations, windows or
   * other sessions of ours are ignored.
   */
  onGrant(g: WireCredit): void {
    // The subject is the holder's own: a body naming another holder, volume or lane is refused.
    if (g.holder !== this.o.holder || g.volume !== this.o.volume || g.lane !== this.o.lane)
      return this.o.onRefused?.(GrantRefusal.wrongSubject);
    // Grants to the holder's other senders share the subject: not ours, not wrong.
    if (g.sender !== this.o.sender) return;
    if (g.session !== 0 && g.session !== this.session) return;
    if (g.incarnation < this.receiverIncarnation) return;
    if (g.incarnation > this.receiverIncarnation && this.o.believes?.(g.incarnation) === false)
      return this.o.onRefused?.(GrantRefusal.unadmittedIncarnation);
    let reset: { incarnation: number; window: number; restarted: boolean } | undefined;
    if (g.incarnation > this.receiverIncarnation) {
      const restarted = this.receiverIncarnation !== -1;
      this.receiverIncarnation = g.incarnation;
      this.windowId = 0;
      this.window = initialSenderWindow;
      if (restarted) reset = { incarnation: g.incarnation, window: 0, restarted: true };
    }
    if (g.session === this.session && g.window > 0) {
      if (g.window > this.windowId) {
        const had = this.windowId;
        this.windowId = g.window;
        this.window = senderApplyGrant(initialSenderWindow, g);
        if (had !== 0 && reset === undefined)
          reset = { incarnation: g.incarnation, window: g.window, restarted: false };
      } else if (g.window === this.windowId) this.window = senderApplyGrant(this.window, g);
    } else if (this.windowId === 0) {
      // The receiver has not bound a window to us yet (it just started): ask for one.
      this.requestCredit();
    }
    if (reset !== undefined) this.o.onReset?.(reset);
    this.pump();
  }

  /**
   * Queues a unit (FIFO); it goes out at the end of this turn, with the others queued, if credit allows. Drops only
   * what its `wanted` refuses.
   */
  send(unit: QueuedUnit): void {
    if (this.closed) throw new Error("credit sender is closed");
    if (!Number.isSafeInteger(unit.bytes) || unit.bytes < 0)
      throw new CreditError(
        CreditErrorCode.InvalidCredit,
        `unit bytes must be a non-negative safe integer, got ${unit.bytes}`,
        { bytes: unit.bytes },
      );
    this.queue.push(unit);
    this.queuedBytes += unit.bytes;
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    queueMicrotask(() => {
      this.pumpScheduled = false;
      if (!this.closed) this.pump();
    });
  }

  /**
   * Sends queued units now while they fit the grant, packed into frames; asks for more credit when
   * the head does not fit.
   */
  pump(): void {
    const q = this.queue;
    while (this.head < q.length) {
      // A unit no longer wanted leaves from the head without taking credit.
      const headUnit = q[this.head]!;
      if (headUnit.wanted !== undefined && !headUnit.wanted()) {
        this.queuedBytes -= headUnit.bytes;
        this.unitsSkipped++;
        this.head++;
        continue;
      }
      // The longest run from the head that fits the credit window and one frame.
      const { sentThrough: sentBefore, grantedThrough } = this.window;
      let sent = sentBefore;
      let encoded = 0;
      const data: Uint8Array[] = [];
      const figures: number[] = [];
      const headers: (MessageHeaders | undefined)[] = [];
      const tokens: string[] = [];
      while (this.head + data.length < q.length && data.length < this.maxFrameUnits) {
        const u = q[this.head + data.length]!;
        if (sent + u.bytes > grantedThrough) break;
        if (data.length > 0 && u.wanted !== undefined && !u.wanted()) break; // skipped at the head next round
        if (data.length > 0 && encoded + u.data.byteLength > this.maxFrameBytes) break;
        sent += u.bytes;
        encoded += u.data.byteLength;
        data.push(u.data);
        figures.push(sent);
        headers.push(u.headers);
        if (this.o.attest !== undefined && u.attestation === undefined) this.signFrom(this.head + data.length - 1);
        if (u.attestation !== undefined && !tokens.includes(u.attestation)) tokens.push(u.attestation);
      }
      const n = data.length;
      if (n === 0) break;
      const body = encodeUnitRun(data, figures, headers);
      // A lone unit keeps its own headers on the message; a frame carries them per unit inside.
      const own = n === 1 ? q[this.head]!.headers : undefined;
      const msgHeaders: Record<string, string> = { ...own, ...this.creditHeaders(sent) };
      if (tokens.length > 0) msgHeaders[UNIT_ATTESTATION_HEADER] = tokens.join(",");
      this.o.transport.publish(this.subject, body, { headers: msgHeaders });
      this.window = senderRecordSend(this.window, sent - sentBefore);
      this.queuedBytes -= sent - sentBefore;
      this.messagesSent++;
      this.unitsSent += n;
      const first = this.head;
      this.head += n;
      for (let i = first; i < first + n; i++) q[i]!.onSent?.();
    }
    if (this.head > 0 && this.head * 2 >= q.length) {
      // Drop the sent prefix once it is at least half the array (amortized O(1) per unit).
      this.queue = q.slice(this.head);
      this.head = 0;
    }
    if (this.head < this.queue.length) this.blocked();
    else this.clearRetry();
  }

  /** Signs the queued units from `at` on that have no attestation yet, up to one signature's worth. */
  private signFrom(at: number): void {
    const q = this.queue;
    const signer = this.o.attest!;
    let end = at;
    while (end < q.length && end - at < signer.maxUnits && q[end]!.attestation === undefined) end++;
    const tokens = signer.sign(q.slice(at, end).map((u) => u.data));
    for (let i = at; i < end; i++) q[i]!.attestation = tokens[i - at];
  }

  /** Our identity, session, credit window and cumulative sent bytes, as message headers. */
  private creditHeaders(sentThrough: number): Record<string, string> {
    const h: Record<string, string> = {
      [SENDER_HEADER]: this.o.sender,
      [SESSION_HEADER]: String(this.session),
      [SENT_THROUGH_HEADER]: String(sentThrough),
    };
    if (this.windowId > 0) h[CREDIT_WINDOW_HEADER] = creditWindowTag(this.receiverIncarnation, this.windowId);
    return h;
  }

  /** Publishes a credit request stating our session, window, cumulative sent bytes and what the queue head needs. */
  requestCredit(): void {
    if (this.closed) return;
    const want = Math.max(0, (this.queue[this.head]?.bytes ?? 0) - senderAvailable(this.window));
    this.requests++;
    this.o.transport.publish(
      this.subject,
      encodeMessage(creditRequestSpec, {
        sender: this.o.sender,
        holder: this.o.holder,
        volume: this.o.volume,
        lane: this.o.lane,
        wantBytes: want,
      }),
      { headers: this.creditHeaders(this.window.sentThrough) },
    );
  }

  private blocked(): void {
    if (this.retryTimer !== undefined) return;
    this.requestCredit();
    this.retryTimer = this.o.clock.setTimeout(() => {
      this.retryTimer = undefined;
      if (this.head < this.queue.length && !this.closed) this.blocked();
    }, this.o.retryMs ?? 50);
  }

  private clearRetry(): void {
    if (this.retryTimer !== undefined) this.o.clock.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  /** Stops timers and the grant subscription. Queued units stay with the caller's obligations. */
  close(): void {
    this.closed = true;
    this.clearRetry();
    this.sub?.unsubscribe();
  }
}
