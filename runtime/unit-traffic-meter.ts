import type { ConnectionEvent, InboundMessage, MessageHandler, PublishOptions, RequestOptions, SubscribeOptions, Transport, TransportSubscription } from "../transport/index.ts";
import { unitDestination } from "../transport/index.ts";

/**
 * A `Transport` decorator that counts the transport-unit bytes this process publishes to each
 * holder (its steady write load per edge, which a route measurement carries so repair can be
 * judged on what the link has left). Everything passes through unchanged.
 */
export class UnitTrafficMeter implements Transport {
  private bytesTo = new Map<string, number>();

  /** `inner`: the transport underneath (link shaping looks through the meter). */
  constructor(readonly inner: Transport) {}

  get name(): string {
    return this.inner.name;
  }

  /** Bytes of units published to each holder since the last call (the counts restart at zero). */
  take(): Map<string, number> {
    const out = this.bytesTo;
    this.bytesTo = new Map();
    return out;
  }

  publish(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    const to = unitDestination(subject);
    if (to !== undefined) this.bytesTo.set(to, (this.bytesTo.get(to) ?? 0) + data.byteLength);
    this.inner.publish(subject, data, opts);
  }

  subscribe(subject: string, handler: MessageHandler, opts?: SubscribeOptions): TransportSubscription {
    return this.inner.subscribe(subject, handler, opts);
  }

  request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage> {
    return this.inner.request(subject, data, opts);
  }

  respond(msg: InboundMessage, data: Uint8Array, opts?: { headers?: Record<string, string> }): void {
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
