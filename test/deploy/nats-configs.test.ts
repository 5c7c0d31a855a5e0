/**
 * The nats-server configs `custody init` writes: with three regions, each server starts from its
 * file (the regions' and the replicated control log's three), and is joined to both other regions
 * (and the control cluster, whose servers run JetStream) by gateways in both directions; a
 * message published in one region reaches a subscriber in each other region.
 */
import test from "ava";
import { join } from "node:path";
import { operatorConnectOptions } from "../../cli/operator-connection.ts";
import { connectNats, closeNats } from "../../transport/nats-connection.ts";
import { pidAlive } from "../kit/deployed-process.ts";
import { initAndStartNats } from "../kit/index.ts";
import { custodyStdout } from "../kit/custody-cli.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

/** An event subject of the deployment's volume: the writer may publish it, the operator receive it. */
const SUBJECT = "custody.v1.event.vol-d";

test("three regions: every nats-server custody init configured starts, gateways join each region to the other two, and a message crosses them", async (t) => {
  const pids: number[] = [];
  const { out, index, servers } = await initAndStartNats(custodyStdout, () => tempDir("custody-deploy-"), { metrics: true, extraRegions: ["eu"] }, (p) => pids.push(p.pid));
  t.teardown(async () => {
    for (const s of servers) if (s.running) await s.signal("SIGKILL", 10_000);
  });
  t.deepEqual(index.natsServers.map((s) => s.region), ["east", "west", "eu"]);
  // The servers are secured: the writer publishes one of its volume's events in the first region,
  // the operator (who may read every event) listens in the others.
  const writerRole = join(out, "roles", "writer-w1");
  const as = (dir: string, server: string, name: string) => connectNats(operatorConnectOptions({ server, nkeySeed: join(dir, "nats.nk"), ca: join(dir, "ca.pem"), inboxPrefix: `_INBOX.${name}` }, `gw-${server}`));
  const conns = await Promise.all(index.natsServers.map((s, i) => (i === 0 ? as(writerRole, s.url, "writer.w1") : as(join(out, "operator"), s.url, "operator.operator"))));
  try {
    const got = conns.slice(1).map((nc) => {
      const sub = nc.subscribe(SUBJECT, { max: 1 });
      return (async () => {
        for await (const m of sub) return m.string();
        return undefined;
      })();
    });
    await Promise.all(conns.slice(1).map((nc) => nc.flush()));
    // Gateways learn a remote interest lazily: publish until every other region has seen it.
    let done = false;
    const all = Promise.all(got).then((v) => ((done = true), v));
    while (!done) {
      conns[0]!.publish(SUBJECT, "from east");
      await Promise.race([all, new Promise((r) => setTimeout(r, 200))]);
    }
    t.deepEqual(await all, ["from east", "from east"]);
  } finally {
    await Promise.all(conns.map((nc) => closeNats(nc)));
  }
  for (const s of servers) t.true((await s.signal("SIGTERM", 60_000)).inTime, s.log);
  t.deepEqual(pids.filter(pidAlive), []);
});
