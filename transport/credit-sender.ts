import type { Clock } from "../core/clock.ts";
import {
  initialSenderWindow,
  senderApplyGrant,
  senderAvailable,
  senderCanSend,
  senderRecordSend,
  type SenderWindow,
} from "./credit-window.ts";
import { creditSubject, unitSubject } from "./subjects.ts";
import type { MessageHeaders, Transport, TransportSubscription } from "./transport.ts";
import { creditRequestSpec, creditSpec, decodeMessage, encodeMessage, type WireCredit } from "./wire/index.ts";

/**
 * The sending half of the credit protocol for one edge (sender → holder, one lane). Units are
 * queued in order and published only while they fit in the cumulative grant, so bytes in flight
 * never exceed what the holder admitted; nothing is ever dropped — a blocked sender just queues
 * (its caller keeps the memory bounded, e.g. a holder's arena withholds ITS upstream credits).
 * Every unit carries the sender's id and cumulative `sentThrough` in headers, so the receiver can
 * account units lost on the wire.
 */

/** Header naming the sender of a unit (credits are per sender). */
export const SENDER_HEADER = "Custody-Sender";
/** Header carrying the sender's cumulative payload bytes sent, including this unit. */
export const SENT_THROUGH_HEADER = "Custody-Sent-Through";

/** A unit waiting for credit: its encoded `unit` message and payload size (the credited bytes). */
export interface QueuedUnit {
  readonly data: Uint8Array;
  readonly bytes: number;
  readonly headers?: MessageHeaders;
  /** Called right after the unit is handed to the transport (never a receipt). */
  readonly onSent?: () => void;
}

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
}

/** Sender-side credit endpoint for one (holder, volume, lane). Not thread-safe; one owner. */
export class CreditSender {
  private window: SenderWindow = initialSenderWindow;
  private readonly queue: QueuedUnit[] = [];
  private queuedBytes = 0;
  private retryTimer: unknown;
  private sub: TransportSubscription | undefined;
  private closed = false;
  readonly subject: string;
  /** Number of credit requests sent (diagnostics). */
  requests = 0;

  constructor(private readonly o: CreditSenderOptions) {
    this.subject = unitSubject(o.holder, o.volume, o.lane);
  }

  /**
   * Subscribes to the holder's grants itself and asks for initial credit. Use this when nothing
   * else owns inbound events (a volume writer, a test); an actor instead routes grants to `onGrant`.
   */
  attach(): this {
    this.sub = this.o.transport.subscribe(creditSubject(this.o.holder, this.o.volume, this.o.lane), (m) => {
      try {
        this.onGrant(decodeMessage(creditSpec, m.data));
      } catch {
        // A malformed grant is ignored: grants are absolute, the next good one repairs the window.
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

  /** Units and bytes waiting for credit. */
  get backlog(): { units: number; bytes: number } {
    return { units: this.queue.length, bytes: this.queuedBytes };
  }

  /** Applies a grant addressed to us (others' grants on the same subject are ignored), then sends what fits. */
  onGrant(g: WireCredit): void {
    if (g.sender !== this.o.sender || g.holder !== this.o.holder || g.volume !== this.o.volume || g.lane !== this.o.lane) return;
    this.window = senderApplyGrant(this.window, g);
    this.pump();
  }

  /** Queues a unit (FIFO) and sends everything that fits now. Never drops. */
  send(unit: QueuedUnit): void {
    if (this.closed) throw new Error("credit sender is closed");
    this.queue.push(unit);
    this.queuedBytes += unit.bytes;
    this.pump();
  }

  /** Sends queued units while they fit the grant; asks for more when the head does not fit. */
  pump(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (!senderCanSend(this.window, head.bytes)) break;
      this.window = senderRecordSend(this.window, head.bytes);
      this.queue.shift();
      this.queuedBytes -= head.bytes;
      this.o.transport.publish(this.subject, head.data, {
        headers: { ...head.headers, [SENDER_HEADER]: this.o.sender, [SENT_THROUGH_HEADER]: String(this.window.sentThrough) },
      });
      head.onSent?.();
    }
    if (this.queue.length > 0) this.blocked();
    else this.clearRetry();
  }

  /** Publishes a credit request stating our cumulative sent bytes and what the queue head needs. */
  requestCredit(): void {
    if (this.closed) return;
    const want = Math.max(0, (this.queue[0]?.bytes ?? 0) - senderAvailable(this.window));
    this.requests++;
    this.o.transport.publish(
      this.subject,
      encodeMessage(creditRequestSpec, { sender: this.o.sender, holder: this.o.holder, volume: this.o.volume, lane: this.o.lane, wantBytes: want }),
      { headers: { [SENDER_HEADER]: this.o.sender, [SENT_THROUGH_HEADER]: String(this.window.sentThrough) } },
    );
  }

  private blocked(): void {
    if (this.retryTimer !== undefined) return;
    this.requestCredit();
    this.retryTimer = this.o.clock.setTimeout(() => {
      this.retryTimer = undefined;
      if (this.queue.length > 0 && !this.closed) this.blocked();
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
