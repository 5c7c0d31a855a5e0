import anyTest, { type TestFn } from "ava";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { gatherProcessStats, serveProcessStats } from "../../runtime/process-stats.ts";
import { psSubject } from "../../transport/subjects.ts";
import { withNatsServer, type NatsTestContext } from "../helpers/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

test("every serving process answers custody.v1.ps.all; a role filter reaches only that role; a garbage reply is counted, not returned", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-a" });
  const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-b" });
  const asker = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-asker" });
  t.teardown(() => Promise.all([a.close(), b.close(), asker.close()]));
  let retained = 10;
  serveProcessStats(a, "holder", () => ({ id: "h-1", incarnation: 3, counters: { units: 7 }, figures: { retainedBytes: retained } }));
  serveProcessStats(b, "writer", () => ({ id: "vol-1", counters: {}, figures: { custodyLagSeqs: 2 } }));
  // A hostile process answers with garbage.
  b.subscribe(psSubject("all"), (m) => b.respond(m, new TextEncoder().encode("{not json")));
  await Promise.all([a.flush(), b.flush()]);

  const all = await gatherProcessStats(asker.connection, { waitMs: 500 });
  t.deepEqual(all.stats.map((s) => `${s.role}/${s.id}`), ["holder/h-1", "writer/vol-1"]);
  t.is(all.rejected, 1);
  const holder = all.stats[0]!;
  t.is(holder.incarnation, 3);
  t.is(holder.figures["retainedBytes"], 10);
  t.true(holder.rssBytes > 0);

  retained = 99;
  const holders = await gatherProcessStats(asker.connection, { role: "holder", waitMs: 500 });
  t.deepEqual(holders.stats.map((s) => s.id), ["h-1"]);
  t.is(holders.stats[0]!.figures["retainedBytes"], 99);
});
