import type {
  InboundMessage,
  MessageHandler,
  MessageHeaders,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
  Transport,
  TransportSubscription,
} from "../transport/index.ts";

/** Sees every message an actor publishes, before it enters the network. */
export type PublishTap = (subject: string, data: Uint8Array, headers: MessageHeaders) => void;

/**
 * A Transport that hands every publish to `tap` and then to `inner` unchanged. The simulator
 * wraps each actor's endpoint with one, so its checks see exactly what the actor said (a receipt's
 * claims, a grant, a unit's credit header) at the instant it said it, without a hook in the actor.
 */
export class TappedTransport implements Transport {
  readonly name: string;

  constructor(
    private readonly inner: Transport,
    private readonly tap: PublishTap,
  ) {
    this.name = inner.name;
  }

  publish(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    this.tap(subject, data, opts?.headers ?? {});
    this.inner.publish(subject, data, opts);
  }

  subscribe(subject: string, handler: MessageHandler, opts?: SubscribeOptions): TransportSubscription {
    return this.inner.subscribe(subject, handler, opts);
  }

  request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage> {
    this.tap(subject, data, opts.headers ?? {});
    return this.inner.request(subject, data, opts);
  }

  respond(msg: InboundMessage, data: Uint8Array, opts?: { headers?: MessageHeaders }): void {
    if (msg.reply !== undefined) this.tap(msg.reply, data, opts?.headers ?? {});
    this.inner.respond(msg, data, opts);
  }

  flush(): Promise<void> {
    return this.inner.flush();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
