/**
 * AVA glue: every integration test file starts its servers the same way, in `test.before`, and
 * always stops them in `test.after.always`, even when a test fails.
 *
 *   const test = anyTest as TestFn<NatsTestContext>;
 *   withNatsServer(test);
 *   test("...", async (t) => { const nc = await connectNats({ servers: t.context.nats.url }); ... });
 */
import type { TestFn } from "ava";
import {
  startNatsServer,
  startSupercluster,
  type NatsServerHandle,
  type NatsServerOptions,
  type SuperclusterHandle,
  type SuperclusterOptions,
} from "./nats-server.ts";

/** Context of a test file that shares one real nats-server. */
export interface NatsTestContext {
  nats: NatsServerHandle;
}

/** Context of a test file that shares one real supercluster. */
export interface SuperclusterTestContext {
  supercluster: SuperclusterHandle;
}

/** Starts one nats-server before the file's tests and always stops it (and deletes its files) after. */
export function withNatsServer<C extends NatsTestContext>(test: TestFn<C>, opts: NatsServerOptions = {}): void {
  test.before(async (t) => {
    t.context.nats = await startNatsServer(opts);
  });
  test.after.always(async (t) => {
    await t.context.nats?.stop();
  });
}

/** Starts one supercluster before the file's tests and always stops it after. */
export function withSupercluster<C extends SuperclusterTestContext>(test: TestFn<C>, opts: SuperclusterOptions): void {
  test.before(async (t) => {
    t.context.supercluster = await startSupercluster(opts);
  });
  test.after.always(async (t) => {
    await t.context.supercluster?.stop();
  });
}
