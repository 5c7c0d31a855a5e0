/**
 * A writer process whose workload keeps several writes in flight, SIGKILLed mid-stream: the volume
 * it leaves behind still holds every write its acknowledgement log (appended synchronously after each
 * acknowledgement, so a SIGKILL loses no line of it) names, and its units reached the holder in
 * write order. Real nats-server, real holder, controller and writer processes, real files.
 */
import anyTest, { type TestFn } from "ava";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { VolumeTopology } from "../../actors/controller/controller-config.ts";
import { openPayload } from "../../transport/protocol/index.ts";
import { UnitOutbox } from "../../actors/writer/unit-outbox.ts";
import { systemClock } from "../../core/clock.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { unitSubject } from "../../transport/protocol/subjects.ts";
import { readAckLog as ackLines, workloadWrite } from "../../actors/runtime/workload.ts";
import { writerRoleSchema } from "../../actors/runtime/role-config.ts";
import { bootstrapControlLog, writeHolderRole, writeWriterRole } from "../kit/index.ts";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { readUnitMessage } from "../../transport/unit-frames.ts";
import { SmartWalVolume } from "../../volume/index.ts";
import { site, tempDir } from "../e2e/e2e-fixture.ts";
import { withNatsServerAndClient, type NatsClientTestContext } from "../kit/nats-test-context.ts";
import { until } from "../kit/until.ts";

const test = anyTest as TestFn<NatsClientTestContext>;
withNatsServerAndClient(test, "in-flight-test");

/** Generous bounds that only end a hung run; they measure nothing. */
const READY_MS = 60_000;
const WAIT_MS = 90_000;
const REGION = "inflight";
const IN_FLIGHT = 8;
const BLOCKS = 4;
const BLOCK_COUNT = 256;
const SLOTS = BLOCK_COUNT / BLOCKS;

function topology(sites: Record<string, ReturnType<typeof site>>): VolumeTopology {
  return {
    volume: "vol-f",
    lanes: ["l0"],
    writerSite: "s-w",
    sites: Object.values(sites),
    holderSites: { "h-1": "s-h" },
    bases: [{ id: "genesis", holder: "h-1", cut: { l0: 0 }, bytes: 0 }],
    keyAuthorities: [{ id: "ka", site: "s-h" }],
    links: [{ id: "w-h", from: "s-w", to: "s-h", bandwidthBytesPerSec: 125_000_000, deps: [] }],
    recovery: { destination: "s-h", detectSec: 5, authorizeSec: 1, acquireCapacitySec: 2, persistSec: 1, validateSec: 1 },
    scenarios: [{ name: "writer site lost", losses: [{ domain: "region:east", kind: "site_destruction" }], deadlineSec: 600, required: true, destination: "s-h" }],
    timelines: [],
    staleAfterMs: 10_000,
    releasable: [],
  };
}


test.serial("a writer with 8 writes in flight that is SIGKILLed mid-stream loses no acknowledged write, its acknowledgements follow write order, and its units reach the holder in write order holding each write's own blocks", async (t) => {
  t.timeout(240_000);
  const { nc } = t.context;
  const dir = tempDir("custody-in-flight-");
  const nats = { servers: t.context.nats.url, maxReconnectAttempts: 0 };
  const sites = { "s-w": site("s-w", "east", "east-az1"), "s-h": site("s-h", "west", "west-az1") };
  const holder = writeHolderRole(dir, { id: "h-1", site: sites["s-h"], nats, volume: "vol-f", lane: "l0", upstream: ["w1"], downstream: [], disk: false }, REGION);
  const { log } = await initJetStreamControlLog(nc, { region: REGION });
  const dataKey = randomBytes(32);
  const dataKeyFile = join(dir, "data.key");
  writeFileSync(dataKeyFile, dataKey, { mode: 0o600 });
  const ackLog = join(dir, "acks.jsonl");
  const stateDir = join(dir, "w1");
  const writerFile = writeWriterRole(join(dir, "w1.json"), { nats, stateDir, dataKeyFile, volume: "vol-f", lane: "l0", blockCount: BLOCK_COUNT, firstHops: ["h-1"], holderSites: sites, workload: { intervalMs: 0, inFlight: IN_FLIGHT, blocksPerWrite: BLOCKS, ackLog } }, REGION);
  t.true(writerRoleSchema.safeParse(JSON.parse(readFileSync(writerFile, "utf8"))).success);

  // Every unit on the holder's subject, in the order the bus delivered them (resends included).
  const arrivals: TransportUnit[] = [];
  nc.subscribe(unitSubject("h-1", "vol-f", "l0"), {
    callback: (_e, m) => {
      const read = readUnitMessage({ data: m.data, headers: Object.fromEntries([...(m.headers?.keys() ?? [])].map((k) => [k, m.headers!.get(k)])) }, undefined);
      if (read.kind !== "units") return;
      for (const u of read.units) if (u.unit !== undefined) arrivals.push(u.unit);
    },
  });

  const controllerFile = join(dir, "ctl-f.json");
  writeFileSync(controllerFile, JSON.stringify({ role: "controller", nats, controller: { controllerId: "ctl-f", region: REGION, topology: topology(sites), evalIntervalMs: 100 } }));
  const procs = [DeployedProcess.role("h-1", "holder", holder.file)];
  t.teardown(async () => {
    for (const p of procs) if (p.running) await p.signal("SIGKILL", 10_000);
  });
  await procs[0]!.ready(READY_MS);
  await bootstrapControlLog(log, [{ id: "h-1", site: sites["s-h"], publicKey: holder.publicKey }], { volume: "vol-f", lane: "l0" });
  await log.close();
  const ctl = DeployedProcess.role("ctl-f", "controller", controllerFile);
  procs.push(ctl);
  await ctl.ready(READY_MS);
  const writer = DeployedProcess.role("w1", "writer", writerFile);
  procs.push(writer);
  await writer.ready(READY_MS);
  const logs = () => procs.map((p) => p.log).join("\n");

  // Mid-stream: the volume has wrapped around its slots several times, writes still going.
  await until("500 acknowledged writes", WAIT_MS, () => ackLines(ackLog).length >= 500, logs, 50);
  const killed = await writer.signal("SIGKILL", 10_000);
  t.is(killed.signal, "SIGKILL", "the writer was still running when killed");

  const acks = ackLines(ackLog);
  t.log(`${acks.length} writes acknowledged before the SIGKILL, ${arrivals.length} unit sends seen`);
  // Acknowledged in write order, one after another: write i got the next LSN and lane sequence.
  t.deepEqual(
    acks.map((a) => a.i),
    acks.map((_, k) => k),
    "the log lists writes 0, 1, 2, … in order",
  );
  const bad = acks.filter((a) => a.lsn !== acks[0]!.lsn + a.i * BLOCKS || a.seq !== acks[0]!.seq + a.i || a.lba !== workloadWrite(a.i, BLOCKS, BLOCK_COUNT).lba);
  t.deepEqual(bad.slice(0, 5), [], "LSN, lane sequence and LBA follow the write number");

  // The volume the SIGKILL left, recovered (WAL replay): per slot, the last acknowledged write or a later one.
  const lastAcked = acks.length - 1;
  const vol = await SmartWalVolume.open(join(stateDir, "volume"));
  try {
    t.deepEqual(vol.recovery.damaged, []);
    for (let slot = 0; slot < SLOTS; slot++) {
      const got = Buffer.from(await vol.read(slot * BLOCKS, BLOCKS));
      const acked = lastAcked - ((((lastAcked - slot) % SLOTS) + SLOTS) % SLOTS);
      // Writes after the last logged one may have landed too (at most a window or two of them).
      const allowed: number[] = [];
      for (let j = acked; j <= lastAcked + 2 * IN_FLIGHT; j += SLOTS) allowed.push(j);
      if (!allowed.some((j) => got.equals(workloadWrite(j, BLOCKS, BLOCK_COUNT).data))) t.fail(`slot ${slot} lost its acknowledged write ${acked}`);
    }
  } finally {
    await vol.close();
  }

  // Units in write order: the first time each unit reached the holder, it followed the one before it.
  const seen = new Set<number>();
  const firsts = arrivals.filter((u) => !seen.has(u.firstSeq) && seen.add(u.firstSeq));
  const gaps = firsts.filter((u, k) => u.firstSeq !== (k === 0 ? 1 : firsts[k - 1]!.lastSeq + 1));
  t.deepEqual(gaps.map((u) => `${u.firstSeq}-${u.lastSeq}`).slice(0, 5), [], "each unit starts where the one before it ended");
  // Each acknowledged write's own blocks travelled under its lane sequence; the last few may not
  // have left before the SIGKILL, but every acknowledged one is in the outbox it left (the ack rule).
  const records = (units: readonly TransportUnit[]) => {
    const bySeq = new Map<number, { lba: number; data: Uint8Array }>();
    for (const u of units) for (const r of openPayload(dataKey, u, u.payload)) bySeq.set(r.seq, { lba: r.lba, data: r.data });
    return bySeq;
  };
  const holds = (bySeq: Map<number, { lba: number; data: Uint8Array }>, a: (typeof acks)[number]) => {
    const r = bySeq.get(a.seq);
    return r !== undefined && r.lba === a.lba && Buffer.from(r.data).equals(workloadWrite(a.i, BLOCKS, BLOCK_COUNT).data);
  };
  const sent = records(firsts);
  const lastSent = Math.max(0, ...sent.keys());
  t.true(lastSent > acks[0]!.seq + acks.length / 2, "most acknowledged writes were sent before the SIGKILL");
  t.deepEqual(acks.filter((a) => a.seq <= lastSent && !holds(sent, a)).map((a) => a.i).slice(0, 5), [], "every unit record sent holds its write's LBA and blocks");
  const { outbox, recovered } = await UnitOutbox.open(nodeFileLayer, join(stateDir, "outbox"), systemClock);
  await outbox.close();
  const kept = records(recovered);
  t.deepEqual(acks.filter((a) => !holds(kept, a)).map((a) => a.i).slice(0, 5), [], "every acknowledged write is in the outbox the SIGKILL left");
  for (const p of procs) if (p.running) t.like(await p.signal("SIGTERM", WAIT_MS), { inTime: true }, logs());
});
