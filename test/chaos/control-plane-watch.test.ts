/**
 * The chaos run's control plane on real servers: the supercluster's `controlCluster` (three
 * JetStream servers of their own, one per region, as `custody init` lays out a replicated control
 * log) holds the stream with 3 replicas; the watch sees the stream leader's server killed (a new
 * leader named) and the lease move from one controller to another, and reports an unavailable
 * stretch. The bounds only end a hung run; they measure nothing.
 */
import test from "ava";
import { watchControlPlane } from "../../tools/chaos/control-plane-watch.ts";
import { systemClock } from "../../core/index.ts";
import { commitControlEvent, ControlLogFollower } from "../../custody/index.ts";
import { isProcessAlive } from "../kit/nats-server.ts";
import { startSupercluster } from "../kit/index.ts";
import { initJetStreamControlLog, NatsTransport } from "../../transport/index.ts";
import { until } from "../kit/until.ts";

const SETTLE_MS = 90_000;

test("a killed stream leader's server and a lease taken over are two failovers; the outage between is measured", async (t) => {
  const regions = ["r1", "r2", "r3"];
  const sc = await startSupercluster({ regions, jetstream: false, controlCluster: { name: "control-ctl", regions } });
  const pids = [...sc.pids];
  t.teardown(() => sc.stop());
  t.deepEqual(Object.keys(sc.control).sort(), regions);
  const nc = await NatsTransport.connect({ servers: sc.regions["r1"]!.url, name: "watch-test", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  t.teardown(() => nc.close());
  const { log: store } = await initJetStreamControlLog(nc.connection, { region: "ctl", replicas: 3, placementCluster: "control-ctl" });
  const watch = await watchControlPlane(Object.values(sc.control).map((c) => c.url), "ctl", store, "vol1");
  let stopped: ReturnType<typeof watch.stop> | undefined;
  const stopWatch = () => (stopped ??= watch.stop());
  // Its probe reconnects forever: a failed run must still close it, or the worker never exits.
  t.teardown(async () => void (await stopWatch()));
  const { tally } = watch;
  const explain = () => JSON.stringify({ leader: tally.streamLeader, holder: tally.activeController, leaderChanges: tally.leaderChanges, holderChanges: tally.holderChanges });
  const claim = async (controller: string, term: number) => {
    const f = new ControlLogFollower(store);
    await f.refresh();
    await commitControlEvent(store, f, { controller, clock: systemClock }, () => ({ type: "claim_lease", volume: "vol1", term, renewMs: 500, timeoutMs: 3_000 }));
  };

  await claim("ctl-a", 1);
  await until("the watch sees the lease and a stream leader", SETTLE_MS, () => tally.activeController === "ctl-a" && tally.streamLeader !== undefined, explain);
  const leader = Object.values(sc.control).find((c) => c.serverName === tally.streamLeader)!;
  t.truthy(leader, `the leader ${tally.streamLeader} is a control server`);
  pids.push(leader.pid);
  // Down longer than the servers' longest election timeout (9 s in nats-server 2.9), so the two
  // left elect one of themselves. Back after 500 ms (the test's first version) the killed server
  // could find no election held yet and lead again: the same name, no change to see (CI, loaded).
  await leader.restart({ kill: true, downMs: 12_000 });
  await until("a new stream leader", SETTLE_MS, () => tally.leaderChanges >= 1, explain);
  await claim("ctl-b", 2);
  await until("the lease moves to ctl-b", SETTLE_MS, () => tally.activeController === "ctl-b", explain);

  const r = await stopWatch();
  t.true(r.leaderChanges >= 1);
  t.is(r.holderChanges, 1);
  t.is(r.failovers, r.leaderChanges + r.holderChanges);
  t.true(r.maxUnavailableMs > 0);
  t.log(`longest stretch without a stream leader answering: ${r.maxUnavailableMs} ms`);
  await nc.close();
  pids.push(...sc.pids);
  await sc.stop();
  t.deepEqual(pids.filter(isProcessAlive), [], "no server left");
});
