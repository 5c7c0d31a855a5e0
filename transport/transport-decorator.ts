import type {
  ConnectionEvent,
  InboundMessage,
  MessageHandler,
  MessageHeaders,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
  Transport,
  TransportSubscription,
} from "./transport.ts";

/**
 * A `Transport` that passes everything to `inner` unchanged: the base of decorators (link shaping,
 * traffic metering) that change one or two methods and must forward the rest exactly.
 */
export class TransportDecorator implements Transport {
  constructor(readonly inner: Transport) {}

  get name(): string {
    return this.inner.name;
  }

  publish(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    this.inner.publish(subject, data, opts);
  }

  subscribe(subject: string, handler: MessageHandler, opts?: SubscribeOptions): TransportSubscription {
    return this.inner.subscribe(subject, handler, opts);
  }

  request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage> {
    return this.inner.request(subject, data, opts);
  }

  respond(msg: InboundMessage, data: Uint8Array, opts?: { headers?: MessageHeaders }): void {
    this.inner.respond(msg, data, opts);
  }

  flush(): Promise<void> {
    return this.inner.flush();
  }

  maxPayloadBytes(): number | undefined {
    return this.inner.maxPayloadBytes?.();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  onConnection(listener: (e: ConnectionEvent) => void): () => void {
    return this.inner.onConnection?.(listener) ?? (() => undefined);
  }
}
