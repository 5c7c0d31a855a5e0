/**
 * A first connect that fails says which server and why, with a code (issue #47), and leaves
 * nothing open behind it: nats.js 3.4 kept the socket of a connect whose NATS handshake never
 * finished (a server's HTTP monitoring port accepts TCP but never greets), so a command that failed
 * that way never exited.
 */
import test from "ava";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import type { Socket } from "node:net";
import { connectNats, NatsConnectError } from "../../transport/index.ts";
import { ControlLogUnreachableError, openJetStreamControlLog, closeNats } from "../../transport/index.ts";
import { freePort, startNatsServer, type NatsServerHandle } from "../kit/nats-server.ts";

let server: NatsServerHandle;
test.before(async () => {
  server = await startNatsServer({ jetstream: false });
});
test.after.always(() => server?.stop());

/** Runs `fn` and returns it with the TCP client sockets this process opened meanwhile (Node's `net.client.socket` channel; run it serially, so no other test opens one). */
async function socketsOpenedBy<T>(fn: () => Promise<T>): Promise<{ result: PromiseSettledResult<T>; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const seen = (m: unknown) => void sockets.push((m as { socket: Socket }).socket);
  subscribe("net.client.socket", seen);
  try {
    const [result] = await Promise.allSettled([fn()]);
    return { result: result!, sockets };
  } finally {
    unsubscribe("net.client.socket", seen);
  }
}

test.serial("a connect to a monitoring port is connect_timeout naming the URL, and its socket is closed", async (t) => {
  const url = `nats://127.0.0.1:${server.httpPort}`;
  const { result, sockets } = await socketsOpenedBy(() => connectNats({ servers: url, name: "probe", timeout: 300, maxReconnectAttempts: 0 }));
  t.is(result.status, "rejected");
  const err = (result as PromiseRejectedResult).reason as NatsConnectError;
  t.true(err instanceof NatsConnectError);
  t.is(err.code, "connect_timeout");
  t.true(err.message.startsWith(`cannot connect to ${url}: no NATS server answered within 300 ms`), err.message);
  t.is(sockets.length, 1, "one connect attempt");
  t.true(sockets[0]!.destroyed, "the failed connect's socket is closed (an open one kept the process alive)");
});

test("a connect to a port nobody listens on is connection_refused naming the URL", async (t) => {
  const url = `nats://127.0.0.1:${await freePort()}`;
  const err = await t.throwsAsync(connectNats({ servers: url, name: "probe", timeout: 2_000, maxReconnectAttempts: 0 }), { instanceOf: NatsConnectError });
  t.is(err.code, "connection_refused");
  t.regex(err.message, new RegExp(`^cannot connect to ${url.replace(/[.]/g, "\\.")}: connection refused`));
});

test("a control log on a server without JetStream is control_log_unreachable naming the region, the stream and the server", async (t) => {
  const nc = await connectNats({ servers: server.url, name: "probe", maxReconnectAttempts: 0 });
  try {
    const err = await t.throwsAsync(openJetStreamControlLog(nc, { region: "east", timeoutMs: 1_000 }), { instanceOf: ControlLogUnreachableError });
    t.is(err.code, "control_log_unreachable");
    t.regex(err.message, new RegExp(`^control log east \\(stream CUSTODY_CTRL_east\\) via 127\\.0\\.0\\.1:${server.port}: `));
  } finally {
    await closeNats(nc);
  }
});
