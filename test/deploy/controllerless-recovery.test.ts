/**
 * Recovery and status need no controller (issue #45): a `custody init` deployment on real
 * processes writes through its workload until every write is acknowledged and receipted; then
 * every process and the nats-server of the region holding the volume's only controller (east: the
 * writer, the controller, the RAM holder) are SIGKILLed and not restarted. The operator config
 * names east's server. `custody status` still answers — from the next region's server, computed
 * from the control log and the surviving holder's signed receipts, saying that no controller
 * answered — and `custody recover --volume V --to SITE` rebuilds the volume byte-exact against the
 * writer's acknowledgement log, its read held in the control log while it reads. A command that
 * reaches no server says which URLs it tried.
 */
import test from "ava";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { custodyCli, custodyStdout as custody, type CustodyCliFailure } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { readVolume, tempDir } from "../e2e/e2e-fixture.ts";
import { lsnOffset, readVolumeAckLog, workloadContentThrough } from "../../tools/demo/workload.ts";
import { deployedNetwork } from "./deployed-network.ts";
import { operatorConnectOptions } from "../../cli/operator-connection.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { loadControlTrust } from "../../actors/runtime/control-trust-files.ts";
import { controllerRoleSchema, readRoleConfig } from "../../actors/runtime/role-config.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";

/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 90_000;
const WRITES = 40;
const BLOCKS = 256;
const lastJson = (out: string) => JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, unknown>;

test("with the region of its only controller SIGKILLed, custody status answers from the control log and the holders and says no controller answered; custody recover rebuilds the volume byte-exact against the acknowledgement log", async (t) => {
  // A third region keeps JetStream's meta group a majority when east goes (two of three servers).
  const { out, index, roles, servers, start, eastUrl, asOperator, explain } = await deployedNetwork(t, "custody-recov-", { baseBuilder: false, extraRegions: ["north"] });
  const westUrl = index.natsServers.find((s) => s.region === "west")!.url;
  // The writer's workload: WRITES writes, each logged once acknowledged.
  const ackLog = join(tempDir("custody-recov-acks-"), "acks.jsonl");
  const writerConfig = index.roles.find((r) => r.role === "writer")!.config;
  const w = JSON.parse(readFileSync(writerConfig, "utf8")) as { workload: Record<string, unknown> };
  writeFileSync(writerConfig, JSON.stringify({ ...w, workload: { ...w.workload, count: WRITES, ackLog } }));

  // Bootstrapped through west, the control stream lives in west's cluster: it survives east.
  // (One region's stream is lost with its region; replicating it is the control stream's business.)
  await custody(["bootstrap", join(out, "bootstrap.json"), "--server", westUrl, "--json"]);
  await start("controller-ctl-1");
  for (const r of index.roles.filter((x) => x.role === "holder" || x.role === "writer")) await start(r.instance);

  // Every write acknowledged, and the controller's own document shows them receipted: the
  // surviving cut (every required scenario) reaches the last acknowledged write.
  const acks = await until("the workload's writes acknowledged", SETTLE_MS, async () => {
    const a = readVolumeAckLog(ackLog, "vol-d");
    return a.length === WRITES ? a : undefined;
  }, explain);
  const lastSeq = Math.max(...acks.map((a) => a.seq));
  const lastLsn = Math.max(...acks.map((a) => a.lsn));
  await until("the controller's status shows every acknowledged write surviving", SETTLE_MS, async () => {
    const doc = lastJson(await custody(["status", "vol-d", ...asOperator, "--json"]));
    const cut = doc.survivingCut as [string, number][] | null;
    return doc.controller === "ctl-1" && cut !== null && (cut.find(([l]) => l === "l0")?.[1] ?? 0) >= lastSeq ? true : undefined;
  }, explain);

  // East dies whole and stays dead: writer, controller, RAM holder, then its nats-server.
  for (const instance of ["writer-w1", "controller-ctl-1", "holder-h-e1"]) t.is((await roles.get(instance)!.signal("SIGKILL", SETTLE_MS)).signal, "SIGKILL");
  const east = servers[index.natsServers.findIndex((s) => s.region === "east")]!;
  t.is((await east.signal("SIGKILL", SETTLE_MS)).signal, "SIGKILL");

  // custody status: the operator config's server (east's) refuses, the next region's answers; no
  // document comes, so the command computes it and says so. It listens for the dead h-e1 until
  // --evidence-ms (a bound against a hung run: the live holder's receipts come every 500 ms).
  const noController = [...asOperator, "--timeout", "1000", "--evidence-ms", "5000"];
  const computed = lastJson(await custody(["status", "vol-d", ...noController, "--json"]));
  t.is(computed.controllerAnswered, false);
  t.is(computed.controller, "none");
  const from = computed.computedFrom as { holders: string[]; holdersAnswered: string[]; server: string; controlSeq: number };
  // h-w1 keeps every write on disk (no base, so nothing releases it).
  t.deepEqual(from.holders, ["h-w1"], `the surviving disk holder's receipts verified: ${JSON.stringify(from)}`);
  t.deepEqual(from.holdersAnswered, ["h-w1"], "the surviving holder was asked and answered");
  // East's server was passed over for a surviving region's (west's, or north's while west's JetStream still elects a leader).
  t.true(index.natsServers.some((x) => x.region !== "east" && x.url === from.server), `served by ${from.server}`);
  const cut = computed.survivingCut as [string, number][] | null;
  t.true(cut !== null && cut.find(([l]) => l === "l0")![1] >= lastSeq, `the computed surviving cut ${JSON.stringify(cut)} keeps every acknowledged write (through seq ${lastSeq})`);
  const table = await custody(["status", "vol-d", ...noController]);
  t.regex(table, /^controller: none answered \(status computed by this command from the control log at seq \d+ via \S+ and 1 holder's receipts: h-w1; 1 holder answered stats; listened \d+ ms\)$/m);
  t.regex(table, /crash:h-e1/);

  // custody recover: no controller, no scenario — everything that survives now, byte-exact.
  const keyFile = join(tempDir("custody-recov-key-"), "data.key");
  writeFileSync(keyFile, readFileSync(join(out, "roles", "writer-w1", "data.key")).toString("hex"));
  const dir = join(tempDir("custody-recov-vol-"), "vol");
  const r = lastJson(await custody(["recover", "--volume", "vol-d", "--to", "s-vault", "--dir", dir, "--blocks", String(BLOCKS), "--key-file", keyFile, ...noController, "--json"]));
  t.is(r.controllerAnswered, false);
  t.deepEqual(r.recovered, r.predicted);
  t.deepEqual(r.fetchErrors, {});
  t.true((r.lsn as number) >= lastLsn, `recovered through lsn ${String(r.lsn)}, the last acknowledged is ${lastLsn}`);
  const got = await readVolume(dir, BLOCKS);
  t.true(Buffer.from(got).equals(Buffer.from(workloadContentThrough(BLOCKS, 1, lsnOffset(acks, 1), r.lsn as number))), "byte-exact against the acknowledgement log");
  t.is((r.holds as string[]).length, 1, "its read was held in the control log");
  // Placed and ended as the operator, signed: the roles' readers (trusting what the controller config names) count both.
  const nc = await connectNats({ ...operatorConnectOptions({ operatorConfig: asOperator[1]!, server: westUrl }, "controllerless-test"), maxReconnectAttempts: 0 });
  t.teardown(() => closeNats(nc));
  const store = await openJetStreamControlLog(nc, { region: "ctl" });
  const { trust } = loadControlTrust(readRoleConfig(index.roles.find((x) => x.role === "controller")!.config, controllerRoleSchema).controlTrust);
  const folded = await new ControlLogFollower(store, undefined, trust).refresh();
  const entries = await store.readAll();
  const holdEntries = entries.filter((e) => e.event.type === "hold_ranges" || e.event.type === "end_hold");
  t.deepEqual(holdEntries.map((e) => `${e.event.type}/${e.event.controller}`), ["hold_ranges/operator", "end_hold/operator"]);
  t.deepEqual(folded.rejected.filter((x) => holdEntries.some((e) => e.seq === x.seq)), [], "both signed by the operator's key");
  t.deepEqual(Object.keys(folded.holds), [], "and the hold ended with the recovery");
  await store.close();
  t.log(`recover: ${String(r.elapsedMs)} ms, ${String(r.unitsVerified)} units (${String(r.unitBytes)} bytes); receipts from ${JSON.stringify(r.holdersHeard)}, ${(r.holdersAnswered as string[]).length} holders answered, listened ${String(r.listenedMs)} ms; fetched ${JSON.stringify(r.fetched)}`);

  // A command that reaches no server names every URL it tried, in one line.
  const dead = eastUrl;
  const failed = (await custodyCli(["status", "vol-d", "--server", dead, "--connect-timeout", "500"]).catch((e: CustodyCliFailure) => e)) as CustodyCliFailure;
  t.is(failed.code, 1);
  t.regex(failed.stderr, new RegExp(`^error \\[no_server\\]: no server answered within 500 ms: ${dead.replace(/[.]/g, "\\.")} \\(`));
  t.is(failed.stderr.trim().split("\n").length, 1);
});
