/**
 * The socket layer under every NATS connection this project opens (see `connectNats`).
 *
 * nats.js 3.4's Node transport leaves the socket of a first connect open when the TCP connect
 * succeeded but the NATS handshake did not finish in time: its `close()` does nothing before the
 * handshake completed. Pointed at a port that accepts TCP but never sends NATS's INFO line (a
 * server's HTTP monitoring port), the connect rejects with a timeout while the socket stays open
 * for as long as the peer keeps it, and a command that failed that way never exits. This
 * transport's `close()` also ends such a socket.
 */
import {
  NatsConnectionImpl,
  setTransportFactory,
  type NatsConnection,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import { NodeTransport, nodeResolveHost } from "@nats-io/transport-node/lib/node_transport.js";

/** NodeTransport whose close also ends a socket whose NATS handshake never finished. */
class HandshakeClosingTransport extends NodeTransport {
  override async close(err?: Error): Promise<void> {
    const handshakeUnfinished = !this.connected;
    await super.close(err);
    if (handshakeUnfinished) this.socket?.destroy();
  }
}

/**
 * Opens a NATS connection over HandshakeClosingTransport (what `connect` of
 * `@nats-io/transport-node` does, with that transport). The factory is process-wide in nats.js:
 * it is set again on every call, so a connection's reconnects use it too unless some other code
 * calls nats.js's own `connect` in between (which only brings back the original transport).
 */
export function connectOverNode(opts: NodeConnectionOptions): Promise<NatsConnection> {
  setTransportFactory({ factory: () => new HandshakeClosingTransport(), dnsResolveFn: nodeResolveHost });
  return NatsConnectionImpl.connect(opts);
}
