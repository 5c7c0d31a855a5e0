/**
 * `Transport` over a real NATS connection. The only module (with `nats-connection.ts`) that
 * touches the NATS client; actors see only the `Transport` interface.
 *
 * - Header records map to NATS `MsgHdrs`; on receive, each header name keeps its wire spelling
 *   (look it up with `headerValue`, which is case-insensitive).
 * - The active OpenTelemetry context is injected (`traceparent`/`tracestate`) on publish, request
 *   and respond, unless the caller already set a `traceparent`.
 * - NATS errors become `TransportError`s with a stable code.
 * - Received payloads are copied, so a receiver owns its bytes and never pins a socket buffer,
 *   unless it subscribes with `borrow` (see `SubscribeOptions`).
 */
import {
  errors as natsErrors,
  headers as natsHeaders,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { closeNats, connectNats, type ConnectNatsOptions } from "./nats-connection.ts";
import { withTraceHeaders } from "./trace-context.ts";
import { TransportError, TransportErrorCode } from "./transport-error.ts";
import { ConnectionEvent } from "./transport.ts";
import type {
  InboundMessage,
  MessageHandler,
  MessageHeaders,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
  Transport,
  TransportSubscription,
} from "./transport.ts";

/** Options of `NatsTransport` (besides the connection options of `connect`). */
export interface NatsTransportOptions {
  /** Endpoint name (defaults to the connection name given to `connect`, else "nats"). */
  name?: string;
  /**
   * Called when a subscription handler throws. Default: write one line to stderr. A throwing
   * handler never breaks the connection or stops the subscription.
   */
  onHandlerError?: (err: unknown, msg: InboundMessage) => void;
  /**
   * Called when the server refuses a publish or subscription for lack of permission (the
   * connection stays up; the message is dropped by the server). Default: one line to stderr.
   * Either way it is counted in `permissionViolations`.
   */
  onPermissionViolation?: (v: PermissionViolation) => void;
}

/** A publish or subscription the server refused for lack of permission. */
export interface PermissionViolation {
  readonly operation: "publish" | "subscription";
  readonly subject: string;
}

/** Maps a nats.js error to a TransportError; `subject` goes into `detail`. */
export function toTransportError(err: unknown, subject: string, timeoutMs?: number): TransportError {
  if (err instanceof TransportError) return err;
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : undefined;
  const is = (cls: abstract new (...a: never[]) => Error) => err instanceof cls || cause instanceof cls;
  const detail: Record<string, unknown> = { subject };
  if (timeoutMs !== undefined) detail["timeoutMs"] = timeoutMs;
  if (is(natsErrors.NoRespondersError) || (err instanceof natsErrors.RequestError && err.isNoResponders())) {
    return new TransportError(TransportErrorCode.NoResponders, `no responders on ${subject}`, detail, { cause: err });
  }
  if (is(natsErrors.TimeoutError)) {
    return new TransportError(
      TransportErrorCode.Timeout,
      `request on ${subject} timed out after ${timeoutMs ?? "?"} ms`,
      detail,
      { cause: err },
    );
  }
  if (is(natsErrors.ClosedConnectionError) || is(natsErrors.DrainingConnectionError)) {
    return new TransportError(TransportErrorCode.Closed, `transport is closed (subject ${subject})`, detail, {
      cause: err,
    });
  }
  if (is(natsErrors.InvalidSubjectError)) {
    return new TransportError(TransportErrorCode.InvalidSubject, `invalid subject ${JSON.stringify(subject)}`, detail, {
      cause: err,
    });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new TransportError(TransportErrorCode.Failed, `transport failure on ${subject}: ${message}`, detail, {
    cause: err,
  });
}

/** Builds NATS headers from a record; undefined when there is nothing to send. */
function toNatsHeaders(record: MessageHeaders): MsgHdrs | undefined {
  const keys = Object.keys(record);
  if (keys.length === 0) return undefined;
  const h = natsHeaders();
  for (const k of keys) h.set(k, record[k] as string);
  return h;
}

/** Flattens NATS headers into a record (first value of a repeated header). */
function fromNatsHeaders(h: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  for (const [k, values] of h) {
    const first = values[0];
    if (first !== undefined) out[k] = first;
  }
  return out;
}

function toInbound(m: Msg, borrow = false): InboundMessage {
  const msg: { subject: string; data: Uint8Array; headers: Record<string, string>; reply?: string } = {
    subject: m.subject,
    // new Uint8Array(view) copies; Buffer#slice would NOT (it is subarray for Buffers). A borrowed
    // view is safe to keep: nats.js hands each socket read and each reassembled message a fresh buffer.
    data: borrow ? m.data : new Uint8Array(m.data),
    headers: fromNatsHeaders(m.headers),
  };
  if (m.reply) msg.reply = m.reply;
  return msg;
}

/** `Transport` implementation over one NATS connection. */
export class NatsTransport implements Transport {
  readonly name: string;
  readonly #nc: NatsConnection;
  readonly #onHandlerError: (err: unknown, msg: InboundMessage) => void;
  readonly #onPermissionViolation: (v: PermissionViolation) => void;
  /** Publishes and subscriptions the server refused for lack of permission. */
  permissionViolations = 0;
  #closing: Promise<void> | undefined;

  readonly #listeners = new Set<(e: ConnectionEvent) => void>();

  /** Wraps an open connection. `close()` drains and closes it. */
  constructor(nc: NatsConnection, opts: NatsTransportOptions = {}) {
    this.#nc = nc;
    this.name = opts.name ?? "nats";
    this.#onHandlerError =
      opts.onHandlerError ??
      ((err, msg) => process.stderr.write(`[${this.name}] handler for ${msg.subject} threw: ${String(err)}\n`));
    this.#onPermissionViolation =
      opts.onPermissionViolation ??
      ((v) =>
        process.stderr.write(`[${this.name}] server refused ${v.operation} on ${v.subject}: permission denied\n`));
    void this.#watch();
  }

  /** The server's `max_payload` from its INFO (undefined before the first connect). */
  maxPayloadBytes(): number | undefined {
    return this.#nc.info?.max_payload;
  }

  /** Turns nats.js status updates into ConnectionEvents (the connection closing by itself included). */
  async #watch(): Promise<void> {
    const nc = this.#nc;
    void nc.closed().then(() => {
      if (this.#closing === undefined) this.#emit(ConnectionEvent.Closed);
    });
    for await (const s of nc.status()) {
      if (s.type === "disconnect") this.#emit(ConnectionEvent.Disconnected);
      else if (s.type === "reconnect") this.#emit(ConnectionEvent.Reconnected);
      else if (s.type === "staleConnection") this.#emit(ConnectionEvent.Stale);
      else if (s.type === "error" && s.error instanceof natsErrors.PermissionViolationError) {
        this.permissionViolations++;
        this.#onPermissionViolation({ operation: s.error.operation, subject: s.error.subject });
      }
    }
  }

  #emit(e: ConnectionEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch (err) {
        process.stderr.write(`[${this.name}] connection listener threw: ${String(err)}\n`);
      }
    }
  }

  /** Watches disconnects, reconnects, stale pings and a close for good (see `Transport.onConnection`). */
  onConnection(listener: (e: ConnectionEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Opens a named connection (see `connectNats`) and wraps it. Rejects if the first connect fails. */
  static async connect(opts: ConnectNatsOptions & NatsTransportOptions): Promise<NatsTransport> {
    const nc = await connectNats(opts);
    const { nkeySeed: _secret, ...rest } = opts; // the seed stays with the authenticator only
    return new NatsTransport(nc, { ...rest, name: opts.name });
  }

  /** The underlying connection, for JetStream/KV clients built on the same socket (not for actors). */
  get connection(): NatsConnection {
    return this.#nc;
  }

  /** Throws TransportError `closed`, `invalid_subject` or `failed`; never a raw nats.js error. */
  publish(subject: string, data: Uint8Array, opts: PublishOptions = {}): void {
    this.#assertOpen(subject);
    try {
      const hdrs = toNatsHeaders(withTraceHeaders(opts.headers));
      this.#nc.publish(subject, data, {
        ...(hdrs ? { headers: hdrs } : {}),
        ...(opts.reply ? { reply: opts.reply } : {}),
      });
    } catch (err) {
      throw toTransportError(err, subject);
    }
  }

  /** Delivers each message to `handler` (exceptions go to `onHandlerError`). Throws TransportError. */
  subscribe(subject: string, handler: MessageHandler, opts: SubscribeOptions = {}): TransportSubscription {
    this.#assertOpen(subject);
    let sub: Subscription;
    try {
      sub = this.#nc.subscribe(subject, {
        ...(opts.queue ? { queue: opts.queue } : {}),
        callback: (err, m) => {
          if (err) return; // subscription-level errors (e.g. permissions) close the subscription
          let msg: InboundMessage | undefined;
          try {
            msg = toInbound(m, opts.borrow === true);
            handler(msg);
          } catch (handlerErr) {
            this.#onHandlerError(handlerErr, msg ?? { subject: m.subject, data: new Uint8Array(0), headers: {} });
          }
        },
      });
    } catch (err) {
      throw toTransportError(err, subject);
    }
    return {
      subject,
      unsubscribe: () => {
        if (this.#nc.isClosed() || sub.isClosed()) return;
        try {
          sub.unsubscribe();
        } catch {
          // closing concurrently: delivery stops either way
        }
      },
      drain: async () => {
        if (this.#nc.isClosed() || sub.isClosed()) return;
        try {
          await sub.drain();
        } catch (err) {
          if (this.#nc.isClosed() || sub.isClosed()) return;
          throw toTransportError(err, subject);
        }
      },
    };
  }

  /** Rejects with TransportError `timeout`, `no_responders`, `closed`, `invalid_subject` or `failed`. */
  async request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage> {
    this.#assertOpen(subject);
    try {
      const hdrs = toNatsHeaders(withTraceHeaders(opts.headers));
      const reply = await this.#nc.request(subject, data, {
        timeout: opts.timeoutMs,
        ...(hdrs ? { headers: hdrs } : {}),
      });
      return toInbound(reply);
    } catch (err) {
      throw toTransportError(err, subject, opts.timeoutMs);
    }
  }

  /** Publishes to `msg.reply`; no-op without a reply subject. Throws TransportError like `publish`. */
  respond(msg: InboundMessage, data: Uint8Array, opts: { headers?: MessageHeaders } = {}): void {
    if (!msg.reply) return;
    this.publish(msg.reply, data, opts.headers ? { headers: opts.headers } : {});
  }

  /** Resolves once the server has processed everything published so far. Rejects `closed`. */
  async flush(): Promise<void> {
    this.#assertOpen("(flush)");
    try {
      await this.#nc.flush();
    } catch (err) {
      throw toTransportError(err, "(flush)");
    }
  }

  /** Drains subscriptions and pending publishes, then closes. Idempotent; concurrent calls share one drain. */
  close(): Promise<void> {
    this.#closing ??= closeNats(this.#nc).catch((err) => {
      // A connection that died underneath us is closed all the same.
      if (!this.#nc.isClosed()) throw toTransportError(err, "(close)");
    });
    return this.#closing;
  }

  #assertOpen(subject: string): void {
    if (this.#closing !== undefined || this.#nc.isClosed() || this.#nc.isDraining()) {
      throw new TransportError(TransportErrorCode.Closed, `transport ${this.name} is closed (subject ${subject})`, {
        subject,
      });
    }
  }
}
