/**
 * Health and discovery the NATS way: a serving role process is the NATS service `custody-<role>`
 * (ping, info, stats of `@nats-io/services`, over our own NATS connection), and `custody ps`
 * lists processes through the services client.
 */
import anyTest, { type TestFn } from "ava";
import { Svcm } from "@nats-io/services";
import { listProcesses, serveProcessStats } from "../../actors/runtime/process-stats.ts";
import { registerService, serviceClient } from "../../actors/runtime/service-registration.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

test.serial("a serving process answers the services client's ping, info and stats as custody-<role> with its id, incarnation and counters, and is gone once it stops serving", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-a" });
  const asker = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-asker" });
  t.teardown(() => Promise.all([a.close(), asker.close()]));
  let units = 5;
  const served = serveProcessStats(a, "holder", () => ({ id: "h-9", incarnation: 2, counters: { units }, figures: { retainedBytes: 64 } }));
  await served.registered;
  // Discovery collects the replies that arrive within the wait: generous, since a loaded machine answers late.
  const client = serviceClient(asker.connection, 2_000);
  const pings = await collect(await client.ping("custody-holder"));
  t.deepEqual(pings.map((p) => [p.name, p.metadata?.["role"], p.metadata?.["id"], p.metadata?.["incarnation"], p.metadata?.["pid"]]), [["custody-holder", "holder", "h-9", "2", String(process.pid)]]);
  const infos = await collect(await client.info("custody-holder"));
  t.deepEqual(infos[0]!.endpoints.map((e) => e.subject), ["custody.v1.svc.holder.h-9"]);
  units = 6;
  const stats = await collect(await client.stats("custody-holder"));
  const data = stats[0]!.endpoints!.find((e) => e.name === "stats")!.data as { counters: Record<string, number>; incarnation: number };
  t.is(data.counters["units"], 6);
  t.is(data.incarnation, 2);
  const direct = await asker.connection.request("custody.v1.svc.holder.h-9", new Uint8Array(0), { timeout: 15_000 });
  t.is((direct.json() as { id: string }).id, "h-9", "the stats endpoint answers a plain request too");

  served.unsubscribe();
  await new Promise((r) => setTimeout(r, 200));
  const after = await listProcesses(asker.connection, { waitMs: 300 });
  t.deepEqual(after.stats, []);
  t.is(after.rejected, 0, "no service at all is an empty list, not an error");
});

test.serial("listProcesses lists only custody services and counts a custody service whose stats are not process stats, without listing it", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-list-a" });
  const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-list-b" });
  const asker = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-list-asker" });
  t.teardown(() => Promise.all([a.close(), b.close(), asker.close()]));
  await serveProcessStats(a, "controller", () => ({ id: "ctl-1", counters: {}, figures: { evaluations: 3 } })).registered;
  // Another team's service on the same bus, and a custody-named one that lies about its stats.
  const other = await new Svcm(b.connection as never).add({ name: "billing", version: "1.0.0" });
  const liar = await registerService(b.connection, { role: "writer", id: "w-x" }, () => ({ nonsense: true }));
  t.teardown(async () => {
    await other.stop();
    await liar.stop();
  });
  // Discovery gathers answers for a window; on a loaded machine an answer can miss one window, so
  // ask again (bounded) until every service answered — the assertions below are about content.
  const gather = async (o: { role?: string }, answers: number) => {
    let r = await listProcesses(asker.connection, { ...o, waitMs: 500 });
    for (let i = 0; i < 10 && r.stats.length + r.rejected < answers; i++) r = await listProcesses(asker.connection, { ...o, waitMs: 500 });
    return r;
  };
  const listed = await gather({}, 2);
  t.deepEqual(listed.stats.map((s) => `${s.role}/${s.id}`), ["controller/ctl-1"]);
  t.is(listed.rejected, 1);
  const writers = await gather({ role: "writer" }, 1);
  t.deepEqual(writers.stats, []);
  t.is(writers.rejected, 1);
});

test.serial("listProcesses with expect returns as soon as that many custody services answered, not after its window; other services do not count", async (t) => {
  // The window is far longer than the test may run: only the early end lets it pass.
  t.timeout(60_000);
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-expect-a" });
  const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-expect-b" });
  const asker = await NatsTransport.connect({ servers: t.context.nats.url, name: "svc-expect-asker" });
  t.teardown(() => Promise.all([a.close(), b.close(), asker.close()]));
  await serveProcessStats(a, "holder", () => ({ id: "h-1", counters: {}, figures: {} })).registered;
  await serveProcessStats(b, "writer", () => ({ id: "w-1", counters: {}, figures: {} })).registered;
  const other = await new Svcm(b.connection as never).add({ name: "billing", version: "1.0.0" });
  t.teardown(() => other.stop());
  const listed = await listProcesses(asker.connection, { waitMs: 600_000, expect: 2 });
  t.deepEqual(listed.stats.map((s) => `${s.role}/${s.id}`), ["holder/h-1", "writer/w-1"]);
  t.is(listed.rejected, 0);
});
