/**
 * AVA glue: every integration test file starts its servers the same way and always cleans up.
 *
 *   const test = anyTest as TestFn<NatsTestContext>;
 *   withNatsServer(test);                     // a serial before-hook: later hooks see t.context.nats
 *   test.before(async (t) => {
 *     const tr = await NatsTransport.connect({ servers: t.context.nats.url, name: "x" });
 *     t.context.defer(() => tr.close());      // runs before the server stops
 *   });
 *
 * The start hook is `test.serial.before`, so every hook registered after it waits for it.
 * Teardown registered with `defer` runs last-in-first-out in `test.after.always`, then the
 * servers stop (and their files are deleted), also when tests failed.
 */
import { closeNats, connectNats, type NatsConnection } from "../../transport/index.ts";
import type { TestFn } from "ava";
import {
  startNatsServer,
  startSupercluster,
  type NatsServerHandle,
  type NatsServerOptions,
  type SuperclusterHandle,
  type SuperclusterOptions,
} from "./nats-server.ts";

type Teardown = () => unknown;

/** Registers cleanup that must run while the servers are still up (e.g. closing connections). */
export interface DeferContext {
  defer(fn: Teardown): void;
}

/** Context of a test file that shares one real nats-server. */
export interface NatsTestContext extends DeferContext {
  nats: NatsServerHandle;
}

/** Context of a test file that shares one real supercluster. */
export interface SuperclusterTestContext extends DeferContext {
  supercluster: SuperclusterHandle;
}

async function runTeardowns(list: Teardown[], errors: unknown[]): Promise<void> {
  while (list.length > 0) {
    const fn = list.pop()!;
    try {
      await fn();
    } catch (err) {
      errors.push(err);
    }
  }
}

function withServers<C extends DeferContext>(test: TestFn<C>, start: (t: { context: C }) => Promise<void>, stop: (c: C) => Promise<void> | undefined): void {
  const teardowns: Teardown[] = [];
  test.serial.before(async (t) => {
    t.context.defer = (fn) => void teardowns.push(fn);
    await start(t);
  });
  test.after.always(async (t) => {
    const errors: unknown[] = [];
    await runTeardowns(teardowns, errors);
    await stop(t.context);
    if (errors.length > 0) throw new AggregateError(errors, "teardown failed");
  });
}

/** Starts one nats-server before the file's tests; always runs `defer`red cleanup, then stops it. */
export function withNatsServer<C extends NatsTestContext>(test: TestFn<C>, opts: NatsServerOptions = {}): void {
  withServers(
    test,
    async (t) => {
      t.context.nats = await startNatsServer(opts);
    },
    (c) => c.nats?.stop(),
  );
}

/** Starts one supercluster before the file's tests; always runs `defer`red cleanup, then stops it. */
export function withSupercluster<C extends SuperclusterTestContext>(test: TestFn<C>, opts: SuperclusterOptions): void {
  withServers(
    test,
    async (t) => {
      t.context.supercluster = await startSupercluster(opts);
    },
    (c) => c.supercluster?.stop(),
  );
}

/** A test context with one plain NATS client connection of its own (`nc`). */
export interface NatsClientTestContext extends NatsTestContext {
  nc: NatsConnection;
}

/** `withNatsServer`, then one client connection `t.context.nc` named `name`, closed before the server stops. */
export function withNatsServerAndClient<C extends NatsClientTestContext>(test: TestFn<C>, name: string): void {
  withNatsServer(test);
  test.before(async (t) => {
    t.context.nc = await connectNats({ servers: t.context.nats.url, name, maxReconnectAttempts: 0 });
    t.context.defer(() => closeNats(t.context.nc));
  });
}
