/**
 * The one place that opens NATS connections. Connections are always named (the name shows in
 * the server's `/connz` and in traces) and reconnect with bounded, jittered back-off.
 */
import { nkeyAuthenticator, type NatsConnection, type NodeConnectionOptions } from "@nats-io/transport-node";
import { connectOverNode } from "./handshake-closing-transport.ts";
import { toConnectError } from "./nats-connect-error.ts";

export type { NatsConnection } from "@nats-io/transport-node";

/** Default reconnect policy: keep trying for about two minutes, then give up and close. */
export const DEFAULT_RECONNECT = {
  maxReconnectAttempts: 60,
  reconnectTimeWait: 2_000,
  reconnectJitter: 250,
  /** Connect timeout per attempt. */
  timeout: 5_000,
} as const;

/** Options of `connectNats`; unset reconnect fields take `DEFAULT_RECONNECT`. */
export interface ConnectNatsOptions {
  /** One URL or a list, e.g. `nats://127.0.0.1:4222`. */
  servers: string | string[];
  /** Connection name (required: an anonymous connection is hard to trace). */
  name: string;
  /** -1 = forever. Default `DEFAULT_RECONNECT.maxReconnectAttempts`. */
  maxReconnectAttempts?: number;
  reconnectTimeWait?: number;
  reconnectJitter?: number;
  timeout?: number;
  /** Keep retrying the first connect instead of failing at once (for services started before NATS). */
  waitOnFirstConnect?: boolean;
  /**
   * Authenticate as this nkey user (the seed's bytes, as read from its 0600 seed file by
   * `readNkeySeed` in transport/security/). Without it the connection is anonymous, which a secured server refuses.
   */
  nkeySeed?: Uint8Array;
  /** Require TLS and trust only this CA certificate file (PEM) for the server's certificate. */
  caFile?: string;
  /** Prefix of this connection's inboxes; must match the user's subscribe permission (`inboxPrefixFor`). */
  inboxPrefix?: string;
  /** Any other nats.js option, passed through unchanged. */
  extra?: Omit<NodeConnectionOptions, "servers" | "name">;
}

/**
 * Opens a named NATS connection with the project's reconnect settings. Rejects with a
 * NatsConnectError naming the server URL(s) and the cause when the first connect fails; a failed
 * connect leaves no socket open (see handshake-closing-transport.ts).
 */
export async function connectNats(opts: ConnectNatsOptions): Promise<NatsConnection> {
  const timeout = opts.timeout ?? DEFAULT_RECONNECT.timeout;
  return connectOverNode({
    ...opts.extra,
    servers: opts.servers,
    name: opts.name,
    maxReconnectAttempts: opts.maxReconnectAttempts ?? DEFAULT_RECONNECT.maxReconnectAttempts,
    reconnectTimeWait: opts.reconnectTimeWait ?? DEFAULT_RECONNECT.reconnectTimeWait,
    reconnectJitter: opts.reconnectJitter ?? DEFAULT_RECONNECT.reconnectJitter,
    timeout,
    waitOnFirstConnect: opts.waitOnFirstConnect ?? false,
    ...(opts.nkeySeed !== undefined ? { authenticator: nkeyAuthenticator(opts.nkeySeed) } : {}),
    ...(opts.caFile !== undefined ? { tls: { caFile: opts.caFile } } : {}),
    ...(opts.inboxPrefix !== undefined ? { inboxPrefix: opts.inboxPrefix } : {}),
  }).catch((err: unknown) => {
    throw toConnectError(err, [opts.servers].flat(), timeout, {
      caFile: opts.caFile,
      credentials: opts.nkeySeed !== undefined,
    });
  });
}

/**
 * Closes a connection the orderly way: drain (handle what subscriptions already received, flush
 * pending publishes), then close. Idempotent: a closed or draining connection is left alone
 * (for draining, waits until it has closed).
 */
export async function closeNats(nc: NatsConnection): Promise<void> {
  if (nc.isClosed()) return;
  if (nc.isDraining()) {
    await nc.closed();
    return;
  }
  await nc.drain();
}
