/**
 * The `links` and `spanFile` options of role configs, on real processes: a writer and two holders
 * started with `custody run` against a real nats-server, the writer's links shaping what it ships.
 */
import anyTest, { type TestFn } from "ava";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { laneKey } from "../../actors/holder/holder-config.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { VolumeTopology } from "../../actors/controller/controller-config.ts";
import { receiptedKey, runsOf } from "../../actors/runtime/custody-ranges.ts";
import { gatherProcessStats } from "../../actors/runtime/process-stats.ts";
import { holderRoleSchema, writerRoleSchema } from "../../actors/runtime/role-config.ts";
import { linksRoute } from "../../actors/runtime/role-links.ts";
import { bootstrapControlLog, writeHolderRole, writeWriterRole } from "../kit/index.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { receiptSubject, unitSubject } from "../../transport/protocol/subjects.ts";
import { readUnitMessage } from "../../transport/unit-frames.ts";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { site, tempDir } from "../e2e/e2e-fixture.ts";
import { withNatsServerAndClient, type NatsClientTestContext } from "../kit/nats-test-context.ts";
import { until } from "../kit/until.ts";
import type { JsonlSpanRecord } from "../../actors/runtime/telemetry/jsonl-span-exporter.ts";

const test = anyTest as TestFn<NatsClientTestContext>;
withNatsServerAndClient(test, "links-test");

/** Generous bounds that only end a hung run; they measure nothing. */
const READY_MS = 60_000;
const WAIT_MS = 60_000;
const FAR_LATENCY_MS = 400;
const REGION = "links";

const spans = (file: string): JsonlSpanRecord[] => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as JsonlSpanRecord) : []);

/** The volume as the controller sees it: the writer's site and the near holder east, the far holder west. */
function topology(sites: Record<string, ReturnType<typeof site>>): VolumeTopology {
  return {
    volume: "vol-l",
    lanes: ["l0"],
    writerSite: "s-w",
    sites: Object.values(sites),
    holderSites: { "h-near": "s-w", "h-far": "s-far" },
    bases: [{ id: "genesis", holder: "h-far", cut: { l0: 0 }, bytes: 0 }],
    keyAuthorities: [{ id: "ka", site: "s-far" }],
    links: [{ id: "w-far", from: "s-w", to: "s-far", bandwidthBytesPerSec: 125_000_000, deps: [] }],
    recovery: { destination: "s-far", detectSec: 5, authorizeSec: 1, acquireCapacitySec: 2, persistSec: 1, validateSec: 1 },
    scenarios: [{ name: "east lost", losses: [{ domain: "region:east", kind: "site_destruction" }], deadlineSec: 600, required: true, destination: "s-far" }],
    timelines: [],
    staleAfterMs: 10_000,
    releasable: [],
  };
}

test.serial("a writer whose links give the far holder a long link ships each unit to the near holder first, though the far one comes first in its lane; the link.send spans in its span file parent the far holder's admit spans; the controller's stats carry each holder's receipted ranges, which come to cover what the holder's stats say it retains", async (t) => {
  const { nc } = t.context;
  const dir = tempDir("custody-links-");
  const url = t.context.nats.url;
  const nats = { servers: url, maxReconnectAttempts: 0 };
  const sites = { "s-w": site("s-w", "east", "east-az1"), "s-far": site("s-far", "west", "west-az1") };
  const near = writeHolderRole(dir, { id: "h-near", site: sites["s-w"], nats, volume: "vol-l", lane: "l0", upstream: ["w1"], downstream: [], disk: false }, REGION);
  const far = writeHolderRole(dir, { id: "h-far", site: sites["s-far"], nats, volume: "vol-l", lane: "l0", upstream: ["w1"], downstream: [], disk: false }, REGION);
  const { log } = await initJetStreamControlLog(nc, { region: REGION });
  // The far holder writes its spans too, to see the link's span parent its admit span.
  const farSpans = join(dir, "spans", "h-far.jsonl");
  const farCfg = JSON.parse(readFileSync(far.file, "utf8"));
  writeFileSync(far.file, JSON.stringify({ ...farCfg, spanFile: farSpans }));

  const dataKeyFile = join(dir, "data.key");
  writeFileSync(dataKeyFile, randomBytes(32), { mode: 0o600 });
  const writerFile = writeWriterRole(join(dir, "w1.json"), { nats, stateDir: join(dir, "w1"), dataKeyFile, volume: "vol-l", lane: "l0", blockCount: 64, firstHops: ["h-far", "h-near"], holderSites: sites, workload: { intervalMs: 50, ackLog: join(dir, "acks.jsonl") } }, REGION);
  const writerSpans = join(dir, "spans", "w1.jsonl");
  const links = { site: "s-w", peers: { "h-far": { site: "s-far", latencyMs: FAR_LATENCY_MS, bandwidthMBps: 100 }, "h-near": { site: "s-w", latencyMs: 0, bandwidthMBps: 100 } } };
  writeFileSync(writerFile, JSON.stringify({ ...JSON.parse(readFileSync(writerFile, "utf8")), links, spanFile: writerSpans }));
  t.true(writerRoleSchema.safeParse(JSON.parse(readFileSync(writerFile, "utf8"))).success);
  t.true(holderRoleSchema.safeParse(JSON.parse(readFileSync(far.file, "utf8"))).success);

  // Which holder each unit (by its first sequence) reached first, seen on the bus itself.
  const firstTo = new Map<number, string>();
  for (const h of ["h-near", "h-far"])
    nc.subscribe(unitSubject(h, "vol-l", "l0"), {
      callback: (_e, m) => {
        const read = readUnitMessage({ data: m.data, headers: Object.fromEntries([...(m.headers?.keys() ?? [])].map((k) => [k, m.headers!.get(k)])) }, undefined);
        if (read.kind !== "units") return;
        for (const u of read.units) if (u.unit !== undefined && !firstTo.has(u.unit.firstSeq)) firstTo.set(u.unit.firstSeq, h);
      },
    });
  let receipts = 0;
  nc.subscribe(receiptSubject("vol-l", "l0"), { callback: () => void receipts++ });

  const controllerFile = join(dir, "ctl-l.json");
  writeFileSync(controllerFile, JSON.stringify({ role: "controller", nats, controller: { controllerId: "ctl-l", region: REGION, topology: topology(sites), evalIntervalMs: 100 } }));
  const procs = [DeployedProcess.role("h-near", "holder", near.file), DeployedProcess.role("h-far", "holder", far.file)];
  t.teardown(async () => {
    for (const p of procs) if (p.running) await p.signal("SIGKILL", 10_000);
  });
  // Holders first, so each claims incarnation 1 and the bootstrap admits exactly that (this controller
  // has no key-continuity admission for a later incarnation).
  for (const p of procs) await p.ready(READY_MS);
  await bootstrapControlLog(log, [{ id: "h-near", site: sites["s-w"], publicKey: near.publicKey }, { id: "h-far", site: sites["s-far"], publicKey: far.publicKey }], { volume: "vol-l", lane: "l0" });
  await log.close();
  const ctl = DeployedProcess.role("ctl-l", "controller", controllerFile);
  procs.push(ctl);
  await ctl.ready(READY_MS);
  const writer = DeployedProcess.role("w1", "writer", writerFile);
  procs.push(writer);
  await writer.ready(READY_MS);
  const logs = () => procs.map((p) => p.log).join("\n");
  await until("units of 20 sequences to both holders and receipts", WAIT_MS, () => firstTo.size >= 20 && receipts > 0, logs);
  // The writer's stats say how many units its links hold back (the far link's latency keeps some in flight).
  await until("the writer to report units in flight on its links", WAIT_MS, async () => ((await gatherProcessStats(nc, { role: "writer", waitMs: 500 })).stats[0]?.figures["linkInFlight"] ?? 0) > 0, logs);

  // Settle inputs over NATS: each holder's retained ranges (its stats) against the controller's receipted ones (its stats).
  let explain = "";
  await until("the controller's receipted ranges to cover both holders' retained ranges", WAIT_MS, async () => (await covered(), explain === "covered"), () => `${explain}\n${logs()}`);
  async function covered(): Promise<void> {
    const holders = (await gatherProcessStats(nc, { role: "holder", waitMs: 500 })).stats;
    const ctl = (await gatherProcessStats(nc, { role: "controller", waitMs: 500 })).stats[0];
    const parts = ["h-near", "h-far"].map((h) => {
      const retained = RangeSet.fromJSON(runsOf(holders.find((s) => s.id === h)?.samples?.[`${laneKey("vol-l", "l0")}.retained`]));
      const receipted = RangeSet.fromJSON(runsOf(ctl?.samples?.[receiptedKey(h, "l0")]));
      return { h, ok: !retained.isEmpty && receipted.coversAll(retained), retained: retained.toString(), receipted: receipted.toString() };
    });
    explain = parts.every((p) => p.ok) ? "covered" : JSON.stringify(parts) + JSON.stringify(ctl?.counters);
  }
  for (const p of procs.reverse()) t.like(await p.signal("SIGTERM", WAIT_MS), { code: 0, inTime: true }, logs());

  t.deepEqual([...new Set(firstTo.values())], ["h-near"], "every unit reached the near holder before the far one");
  const sends = spans(writerSpans).filter((s) => s.name === "link.send");
  t.true(sends.length > 0, "the writer's span file has its shaped hops");
  t.true(sends.every((s) => s.attributes["custody.to"] === "h-far"), "the same-site holder's link is not shaped");
  t.true(sends.every((s) => (s.attributes["custody.link_delay_ms"] as number) >= FAR_LATENCY_MS), "each hop was held back at least the configured latency");
  const sendIds = new Set(sends.map((s) => s.spanId));
  const admits = spans(farSpans).filter((s) => s.name === "holder.admit");
  t.true(admits.length > 0, "the far holder's span file has its admit spans");
  t.true(admits.some((s) => s.parentSpanId !== undefined && sendIds.has(s.parentSpanId)), "an admit span is the child of the link's span");
  const writes = spans(writerSpans).filter((s) => s.name === "writer.write");
  t.true(writes.length > 0, "each workload write is a writer.write span");
  const writeIds = new Set(writes.map((s) => s.spanId));
  t.true(sends.some((s) => s.parentSpanId !== undefined && writeIds.has(s.parentSpanId)), "a shaped hop hangs under the write its unit came from, though the unit left after the outbox flush");
  // Each process names itself in its spans: service.name custody-<role>, service.instance.id its id.
  t.like(writes[0]!.resource, { "service.name": "custody-writer", "service.instance.id": "w1" });
  t.like(admits[0]!.resource, { "service.name": "custody-holder", "service.instance.id": "h-far" });
});

test("a links section routes units to listed holders at other sites only, and is strict", (t) => {
  const route = linksRoute({ site: "a", peers: { h1: { site: "b", latencyMs: 5, jitterMs: 1, bandwidthMBps: 2 }, h2: { site: "a", latencyMs: 9, bandwidthMBps: 1 } } });
  t.deepEqual(route(unitSubject("h1", "v", "l0")), { toSite: "b", toHolder: "h1", profile: { latencyMs: 5, jitterMs: 1, bytesPerMs: 2000 } });
  t.is(route(unitSubject("h2", "v", "l0")), undefined, "same site");
  t.is(route(unitSubject("h3", "v", "l0")), undefined, "not listed");
  t.is(route(receiptSubject("v", "l0")), undefined, "not a unit");
  const bad = holderRoleSchema.safeParse({ role: "holder", nats: { servers: "x" }, controlRegion: "r", stateDir: "d", keyFile: "k", holder: {}, links: { site: "a", peers: { h1: { site: "b", latencyMs: 1, bandwidthMBps: 1, delay: 3 } } } });
  t.false(bad.success);
});
