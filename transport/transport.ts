/**
 * The message seam between actors. Actors publish and subscribe through this interface only and
 * never import the NATS client, so the same actor code runs over real NATS (`NatsTransport`) and
 * over the deterministic simulated network (`sim/`). Every implementation must pass the
 * conformance suite in `test/kit/transport-conformance.ts`.
 *
 * Semantics every implementation keeps (they are those of core NATS):
 * - at-most-once delivery; no delivery to a subscription made after the publish;
 * - per publisher, per subject, messages arrive in publish order;
 * - subjects are dot-separated tokens, with `*` (one token) and `>` (the rest) in subscriptions;
 * - header names are case-insensitive on lookup (see `headerValue`).
 */
export type MessageHeaders = Readonly<Record<string, string>>;

/** A message as a subscriber sees it. `data` is owned by the receiver. */
export interface InboundMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MessageHeaders;
  /** Reply subject for request/reply, when the sender asked for one. */
  readonly reply?: string;
}

export interface PublishOptions {
  headers?: MessageHeaders;
  reply?: string;
}

export interface SubscribeOptions {
  /** Queue group: each message goes to one member of the group. */
  queue?: string;
  /**
   * Deliver `data` as a read-only view of the transport's receive buffer instead of a private copy.
   * The view is never overwritten, but holding it keeps that whole buffer alive: for receivers
   * that copy what they keep and drop the message soon (a holder copies every unit into its arena).
   * Implementations may ignore it and copy anyway.
   */
  borrow?: boolean;
}

export interface RequestOptions {
  headers?: MessageHeaders;
  timeoutMs: number;
}

export type MessageHandler = (msg: InboundMessage) => void;

/**
 * What happens to the connection under a transport: `disconnected` (messages are being lost),
 * `reconnected` (subscriptions are live again; what was lost meanwhile must be repaired by the
 * actors), `stale` (the server stopped answering pings), `closed` (for good, not by `close()`).
 */
export const ConnectionEvent = {
  Disconnected: "disconnected",
  Reconnected: "reconnected",
  Stale: "stale",
  Closed: "closed",
} as const;
export type ConnectionEvent = (typeof ConnectionEvent)[keyof typeof ConnectionEvent];

export interface TransportSubscription {
  readonly subject: string;
  /** Stops delivery at once; messages in flight may be dropped. */
  unsubscribe(): void;
  /** Stops accepting new messages and resolves after those already received were handled. */
  drain(): Promise<void>;
}

export interface Transport {
  /** Name of this endpoint (the NATS connection name), used in logs and traces. */
  readonly name: string;
  /** Fire-and-forget publish. Completion of this call is never custody evidence. */
  publish(subject: string, data: Uint8Array, opts?: PublishOptions): void;
  subscribe(subject: string, handler: MessageHandler, opts?: SubscribeOptions): TransportSubscription;
  /** Request/reply with a timeout; rejects with a TransportError (code `timeout` or `no_responders`). */
  request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage>;
  /** Replies to a request message; no-op if it carried no reply subject. */
  respond(msg: InboundMessage, data: Uint8Array, opts?: { headers?: MessageHeaders }): void;
  /** Resolves once everything published so far has reached the server (or the simulated network). */
  flush(): Promise<void>;
  /** Largest message the server accepts (its `max_payload`), when known; replies are sized under it. */
  maxPayloadBytes?(): number | undefined;
  /** Drains subscriptions and pending publishes, then closes. Idempotent. */
  close(): Promise<void>;
  /**
   * Watches the connection (optional: a transport that cannot lose its connection has nothing to
   * say). Returns a function that stops watching.
   */
  onConnection?(listener: (e: ConnectionEvent) => void): () => void;
}

/** Case-insensitive header lookup (NATS header names are case-sensitive on the wire). */
export function headerValue(headers: MessageHeaders, name: string): string | undefined {
  const direct = headers[name];
  if (direct !== undefined) return direct;
  // A miss is the common case (absent trace or attestation headers): compare lengths before case.
  const lower = name.toLowerCase();
  for (const k in headers) if (k.length === lower.length && k.toLowerCase() === lower) return headers[k];
  return undefined;
}
