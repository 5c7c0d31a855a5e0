/**
 * Measured routes in `custody run` processes on a real nats-server: a writer whose `links` make one
 * holder 150 ms away probes both of its first hops (its `probe` section), the holders answer
 * (theirs), and the controller (its `routes` setting) takes in what the writer publishes.
 */
import anyTest, { type TestFn } from "ava";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { VolumeTopology } from "../../actors/controller/controller-config.ts";
import { decodeRouteMeasurements, routeSubject, type RouteMeasurements } from "../../transport/protocol/index.ts";
import { gatherProcessStats } from "../../actors/runtime/process-stats.ts";
import { holderRoleSchema, writerRoleSchema } from "../../actors/runtime/role-config.ts";
import { bootstrapControlLog, writeHolderRole, writeWriterRole } from "../kit/index.ts";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { site, tempDir } from "../e2e/e2e-fixture.ts";
import { withNatsServerAndClient, type NatsClientTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsClientTestContext>;
withNatsServerAndClient(test, "route-roles-test");

/** Generous bounds that only end a hung run; they measure nothing. */
const READY_MS = 60_000;
const WAIT_MS = 60_000;
const FAR_LATENCY_MS = 150;
const ROUNDS_TO_SETTLE = 5;
const REGION = "routes";
const PROBE = { intervalMs: 500, budgetBytesPerInterval: 100_000, pings: 3, frameBytes: 8192 };

function topology(sites: Record<string, ReturnType<typeof site>>): VolumeTopology {
  return {
    volume: "vol-r",
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

const addToConfig = (file: string, extra: Record<string, unknown>) => writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), ...extra }));

test.serial("a writer process probes its first hops through its shaped links and publishes RTT, throughput and its unit load per edge; the holder processes answer; the controller takes the measurements in", async (t) => {
  const { nc } = t.context;
  const dir = tempDir("custody-route-roles-");
  const nats = { servers: t.context.nats.url, maxReconnectAttempts: 0 };
  const sites = { "s-w": site("s-w", "east", "east-az1"), "s-far": site("s-far", "west", "west-az1") };
  const near = writeHolderRole(dir, { id: "h-near", site: sites["s-w"], nats, volume: "vol-r", lane: "l0", upstream: ["w1"], downstream: [], disk: false }, REGION);
  const far = writeHolderRole(dir, { id: "h-far", site: sites["s-far"], nats, volume: "vol-r", lane: "l0", upstream: ["w1"], downstream: [], disk: false }, REGION);
  // Holders only answer: a zero budget probes nobody.
  addToConfig(near.file, { probe: { ...PROBE, budgetBytesPerInterval: 0, site: "s-w" } });
  addToConfig(far.file, { probe: { ...PROBE, budgetBytesPerInterval: 0, site: "s-far" } });
  const { log } = await initJetStreamControlLog(nc, { region: REGION });
  const dataKeyFile = join(dir, "data.key");
  writeFileSync(dataKeyFile, randomBytes(32), { mode: 0o600 });
  const writerFile = writeWriterRole(join(dir, "w1.json"), { nats, stateDir: join(dir, "w1"), dataKeyFile, volume: "vol-r", lane: "l0", blockCount: 64, firstHops: ["h-far", "h-near"], holderSites: sites, workload: { intervalMs: 20 } }, REGION);
  const links = { site: "s-w", peers: { "h-far": { site: "s-far", latencyMs: FAR_LATENCY_MS, bandwidthMBps: 2 }, "h-near": { site: "s-w", latencyMs: 0, bandwidthMBps: 100 } } };
  addToConfig(writerFile, { links, probe: PROBE });
  t.true(writerRoleSchema.safeParse(JSON.parse(readFileSync(writerFile, "utf8"))).success);
  t.true(holderRoleSchema.safeParse(JSON.parse(readFileSync(far.file, "utf8"))).success);
  t.false(holderRoleSchema.safeParse({ ...JSON.parse(readFileSync(far.file, "utf8")), probe: { ...PROBE, budgetBytes: 1 } }).success, "the probe section is strict");

  const seen: RouteMeasurements[] = [];
  nc.subscribe(routeSubject("w1"), { callback: (_e, m) => void seen.push(decodeRouteMeasurements(m.data, "w1")) });
  const controllerFile = join(dir, "ctl-r.json");
  writeFileSync(controllerFile, JSON.stringify({ role: "controller", nats, controller: { controllerId: "ctl-r", region: REGION, topology: topology(sites), evalIntervalMs: 100, routes: { maxAgeMs: 30_000 } } }));
  const procs = [DeployedProcess.role("h-near", "holder", near.file), DeployedProcess.role("h-far", "holder", far.file)];
  t.teardown(async () => {
    for (const p of procs) if (p.running) await p.signal("SIGKILL", 10_000);
  });
  for (const p of procs) await p.ready(READY_MS);
  await bootstrapControlLog(log, [{ id: "h-near", site: sites["s-w"], publicKey: near.publicKey }, { id: "h-far", site: sites["s-far"], publicKey: far.publicKey }], { volume: "vol-r", lane: "l0" });
  await log.close();
  const ctl = DeployedProcess.role("ctl-r", "controller", controllerFile);
  procs.push(ctl);
  await ctl.ready(READY_MS);
  const writer = DeployedProcess.role("w1", "writer", writerFile);
  procs.push(writer);
  await writer.ready(READY_MS);
  const logs = () => procs.map((p) => p.log).join("\n");

  const edge = (to: string) => seen.at(-1)?.routes.find((r) => r.to === to);
  const end = Date.now() + WAIT_MS;
  while (!(edge("h-far") && edge("h-near") && edge("h-far")!.loadBytesPerSec > 0 && edge("h-far")!.throughputBytesPerSec !== null)) {
    if (Date.now() > end) t.fail(`no measurement of both edges with load: ${JSON.stringify(seen.at(-1))}\n${logs()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  // The rate is a median over recent rounds, each less the quietest recent ping: read it once a few rounds are in.
  const settled = seen.length + ROUNDS_TO_SETTLE;
  while (seen.length < settled) {
    if (Date.now() > end) t.fail(`only ${seen.length} of ${settled} measurements\n${logs()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const farEdge = edge("h-far")!;
  t.log(`far edge: rtt ${farEdge.rttMs.toFixed(1)} ms, throughput ${farEdge.throughputBytesPerSec?.toFixed(0)} B/s, load ${farEdge.loadBytesPerSec.toFixed(0)} B/s; near edge rtt ${edge("h-near")!.rttMs.toFixed(1)} ms`);
  t.like(farEdge, { toSite: "s-far" });
  t.true(farEdge.rttMs >= FAR_LATENCY_MS * 0.9, `far rtt ${farEdge.rttMs}`);
  t.true(farEdge.throughputBytesPerSec! <= 2e6 * 1.25, `far throughput ${farEdge.throughputBytesPerSec}`);
  t.true(seen.every((m) => m.probeBytes <= PROBE.budgetBytesPerInterval));
  const ctlStats = async () => (await gatherProcessStats(nc, { role: "controller", waitMs: 500 })).stats[0]?.counters["route_measurements"] ?? 0;
  const until = Date.now() + WAIT_MS;
  while ((await ctlStats()) === 0) if (Date.now() > until) t.fail(logs());
  for (const p of procs.reverse()) t.like(await p.signal("SIGTERM", WAIT_MS), { code: 0, inTime: true }, logs());
});
