/**
 * A replicated control log survives the loss of the region that holds its leader. Three regions
 * from `custody init` (east: writer, RAM holder, controller; west: disk holder; north: nothing but
 * its servers), so the control stream has 3 replicas on the control cluster, one server per region.
 * With writes and operator commits flowing, both servers of the leader's region are SIGKILLed:
 * commits resume once the other two replicas elect a leader (the appender retries meanwhile),
 * nothing committed is lost, a reader in each surviving region folds the whole log with its
 * chain and every signature verified, and the controller commits through the new leader.
 *
 * The leader is moved to north first (stepdowns, as an operator would before maintenance), so the
 * loss takes the log's leader and none of the roles: what is measured is the log's failover alone.
 */
import test from "ava";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { systemClock } from "../../core/index.ts";
import { commitControlEventRetrying, ControlFenceCode, ControlLogFollower, HoldKind, privateKeyFromPkcs8, type ControlEventBody, type ControlLogEntry } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { operatorConnectOptions } from "../../cli/operator-connection.ts";
import { loadControlTrust } from "../../actors/runtime/control-trust-files.ts";
import { controllerRoleSchema, readRoleConfig } from "../../actors/runtime/role-config.ts";
import { closeNats, connectNats, controlStreamName, openJetStreamControlLog } from "../../transport/index.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { sample } from "../kit/prometheus-sample.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** Generous bounds that only end a hung run; they measure nothing. */
const SETTLE_MS = 120_000;
const STREAM = controlStreamName("ctl");
const VICTIM = "north";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stream's leader and peers as `$JS.API.STREAM.INFO` reports them (undefined while it has none). */
async function streamCluster(jsm: JetStreamManager) {
  const info = await jsm.streams.info(STREAM);
  const c = info.cluster;
  return c?.leader === undefined || c.leader === "" ? undefined : { name: c.name, leader: c.leader, peers: [c.leader, ...(c.replicas ?? []).map((r) => r.name)].sort(), replicas: info.config.num_replicas };
}

test("the control stream's leader region is SIGKILLed: commits resume, nothing committed is lost, every reader's fold verifies, the controller commits through the new leader", async (t) => {
  const began = Date.now();
  const { out, index, servers, roles, start, asOperator, explain } = await deployedNetwork(t, "custody-ctl-repl-", { metrics: true, extraRegions: [VICTIM], baseBuilder: false });
  const urlOf = (r: string) => index.natsServers.find((s) => s.region === r)!.url;
  t.deepEqual((index.controlServers ?? []).map((c) => c.serverName), ["control-ctl-east", "control-ctl-west", "control-ctl-north"]);
  await custody(["bootstrap", join(out, "bootstrap.json"), "--server", urlOf("east"), ...asOperator, "--json"]);
  await start("controller-ctl-1");
  for (const r of index.roles.filter((x) => x.role === "holder")) await start(r.instance);
  await start("writer-w1");
  const controllerMetrics = String((await roles.get("controller-ctl-1")!.ready(0))["metrics"]);
  const acknowledged = async () => sample(await (await fetch(controllerMetrics)).text(), "custody_acknowledged_seq", { volume: "vol-d", lane: "l0" }) ?? 0;

  // The operator, as its commands connect, in each region that survives.
  const connect = (region: string) => connectNats({ ...operatorConnectOptions({ server: urlOf(region), operatorConfig: asOperator[1]! }, `repl-${region}`), maxReconnectAttempts: 0 });
  const [east, west] = [await connect("east"), await connect("west")];
  t.teardown(async () => {
    await closeNats(east);
    await closeNats(west);
  });
  // Short API timeouts: the stream info polls time the election, not a request timeout.
  const jsm = await jetstreamManager(east, { timeout: 1_000 });
  const placed = await until("the control stream has a leader", SETTLE_MS, () => streamCluster(jsm));
  t.deepEqual([placed.name, placed.replicas, placed.peers], ["control-ctl", 3, ["control-ctl-east", "control-ctl-north", "control-ctl-west"]], "3 replicas, one per region, on the control cluster");
  const leaderNow = async () => (await streamCluster(jsm).catch(() => undefined))?.leader;
  for (let i = 0; (await leaderNow()) !== `control-ctl-${VICTIM}`; i++) {
    if (i >= 20) return t.fail(`the leader did not move to ${VICTIM}`);
    const before = await leaderNow();
    if (before === undefined) {
      await sleep(250);
      continue;
    }
    await east.request(`$JS.API.STREAM.LEADER.STEPDOWN.${STREAM}`, "", { timeout: 5_000 }).catch(() => undefined);
    // A new leader (another one: a stepdown never re-elects the same), or the next try after a while.
    for (const end = Date.now() + 20_000; Date.now() < end; await sleep(250)) {
      const now = await leaderNow();
      if (now !== undefined && now !== before) break;
    }
  }

  // Operator commits, one after another from east: pin a hold, end it, pin the next.
  const trust = loadControlTrust(readRoleConfig(index.roles.find((r) => r.role === "controller")!.config, controllerRoleSchema).controlTrust).trust!;
  const signer = { id: "operator", privateKey: privateKeyFromPkcs8(readFileSync(join(out, "operator", "operator.key"))) };
  const store = await openJetStreamControlLog(east, { region: "ctl" });
  const follower = new ControlLogFollower(store, undefined, trust);
  const committed: { seq: number; at: number }[] = [];
  let stopping = false;
  const body = (k: number): ControlEventBody =>
    k % 2 === 0 ? { type: "hold_ranges", holdId: `pin-${k}`, kind: HoldKind.pitr_pin, volume: "vol-d", lane: "l0", ranges: RangeSet.parse("1-1"), holders: [], untilMs: 0, by: "replication-test" } : { type: "end_hold", holdId: `pin-${k - 1}`, reason: "replication test" };
  const committing = (async () => {
    for (let k = 0; !stopping; k++) {
      const { seq } = await commitControlEventRetrying(store, follower, { controller: "operator", clock: systemClock, signer }, () => body(k));
      committed.push({ seq, at: Date.now() });
      await sleep(50);
    }
  })();
  await until("operator commits flow", SETTLE_MS, async () => committed.length >= 5 || undefined, explain);
  const before = (await store.readFrom(1)) as ControlLogEntry[];
  const ackedAtKill = await acknowledged();

  // The leader's region goes: its region server and its control server, SIGKILLed.
  for (const name of [`nats-${VICTIM}`, `nats-control-ctl-${VICTIM}`]) t.is((await servers.find((p) => p.name === name)!.signal("SIGKILL", 10_000)).signal, "SIGKILL");
  // Both are gone now: no commit acknowledged from here on went through the old leader.
  const killedAt = Date.now();
  const committedAtKill = committed.length;
  const elected = until("a new stream leader", SETTLE_MS, async () => {
    const c = await streamCluster(jsm).catch(() => undefined);
    return c !== undefined && c.leader !== `control-ctl-${VICTIM}` ? { leader: c.leader, ms: Date.now() - killedAt } : undefined;
  });
  const resumed = await until("commits resume", SETTLE_MS, async () => committed.slice(committedAtKill).find((c) => c.at > killedAt), explain);
  await until("five commits after the loss", SETTLE_MS, async () => committed.length >= committedAtKill + 5 || undefined, explain);
  stopping = true;
  await committing;
  const leader = await elected;
  t.log(`stream leader re-elected (${leader.leader}) ${leader.ms} ms after the SIGKILL; first commit after it ${resumed.at - killedAt} ms after`);
  t.not(leader.leader, `control-ctl-${VICTIM}`);

  // Writes keep flowing, and the controller commits through the new leader: a holder restarted
  // claims a new incarnation, which the controller admits.
  await until("writes acknowledged after the loss", SETTLE_MS, async () => (await acknowledged()) > ackedAtKill + 20 || undefined, explain);
  await roles.get("holder-h-w1")!.signal("SIGKILL", 10_000);
  await start("holder-h-w1");

  // A reader in each surviving region: the whole log, nothing committed lost, chain and signatures verified.
  const folds = [];
  for (const nc of [east, west]) {
    const s = await openJetStreamControlLog(nc, { region: "ctl" });
    const f = new ControlLogFollower(s, undefined, trust);
    const state = await until("the controller admitted the restarted holder", SETTLE_MS, async () => {
      const st = await f.refresh();
      return (st.holders["h-w1"]?.incarnation ?? 0) >= 3 ? st : undefined;
    }, explain);
    const after = (await s.readFrom(1)) as ControlLogEntry[];
    t.deepEqual(after.slice(0, before.length).map((e) => [e.seq, e.hash, Buffer.from(e.signature?.signature ?? []).toString("hex")]), before.map((e) => [e.seq, e.hash, Buffer.from(e.signature?.signature ?? []).toString("hex")]), "every entry read before the loss is there, unchanged");
    for (const c of committed) t.is(after.find((e) => e.seq === c.seq)?.event.controller, "operator", `committed entry ${c.seq} is there`);
    t.is(f.distrusted, undefined, "the chain verifies");
    t.deepEqual(state.rejected.filter((r) => ([ControlFenceCode.unsigned_event, ControlFenceCode.bad_signature, ControlFenceCode.unreadable_entry] as ControlFenceCode[]).includes(r.code)), [], "every signature verifies");
    t.is(state.lastSeq, after.at(-1)!.seq);
    folds.push(state.headHash);
    await s.close();
  }
  t.is(folds[0], folds[1], "both regions fold to the same head");
  await store.close();
  for (const [name, p] of roles) t.true(p.running, `${name} still runs`);
  t.log(`test ran ${Date.now() - began} ms`);
});
