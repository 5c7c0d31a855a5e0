/**
 * Replica catch-up as a message flow (issue #18) on a real nats-server: the primary's catch-up
 * service in another process, refusals of replicas it does not serve and of malformed requests
 * (typed, counted, nothing opened), and abandoned sessions that expire.
 */
import anyTest, { type TestFn } from "ava";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { CatchUpRefusedError } from "../../actors/replica/catch-up-refusal.ts";
import { replicaBarrierSpec } from "../../actors/replica/replica-messages.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { replicaCatchupSubject } from "../../transport/protocol/subjects.ts";
import { decodeAny, decodeMessage, encodeMessage } from "../../transport/protocol/wire/index.ts";
import { replicaCatchupBeginSpec, replicaCatchupNextSpec, replicaCatchupPlanSpec, replicaCatchupRefusedSpec } from "../../transport/protocol/wire/replica-catchup-messages.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { RecoveryDecision } from "../../volume/recovery-decision.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { until } from "../kit/until.ts";
import { writeFileSync } from "node:fs";
import { readAckLog, workloadWrite } from "../../actors/runtime/workload.ts";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { contentAt, tempDir } from "./e2e-fixture.ts";
import { BLOCKS, newReplicaDir, openReplica, servePrimary } from "./replica-fixture.ts";
import { scriptCommand } from "../kit/script-command.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const PRIMARY = new URL("./catch-up-primary-process.ts", import.meta.url).pathname;
const fill = (blocks: number, byte: number) => new Uint8Array(blocks * BLOCK_SIZE).fill(byte);

/** A primary volume at a fresh directory, with `ops` applied in this process and closed again. */
async function primaryVolume(): Promise<string> {
  const dir = join(tempDir("custody-catchup-primary-"), "vol");
  await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 4096 });
  return dir;
}

async function withVolume<T>(dir: string, fn: (v: SmartWalVolume) => Promise<T>): Promise<T> {
  const v = await SmartWalVolume.open(dir);
  try {
    return await fn(v);
  } finally {
    await v.close();
  }
}

/** Starts the primary's catch-up service as its own process; resolves once it serves. */
function spawnPrimary(url: string, dir: string, volume: string, key: Uint8Array, maxChunkBytes: number): Promise<{ child: ChildProcess; stop(): Promise<Record<string, number>> }> {
  return new Promise((resolve, reject) => {
    const c = scriptCommand(PRIMARY, [url, dir, volume, "r1", Buffer.from(key).toString("hex"), String(maxChunkBytes)]);
    const child = spawn(c.command, c.args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const exited = new Promise<void>((res) => child.on("exit", () => res()));
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (!out.includes("serving\n")) reject(new Error(`primary process exited ${code}: ${err}`));
    });
    child.stdout!.on("data", (d: Buffer) => {
      const before = out;
      out += d.toString();
      if (!before.includes("serving\n") && out.includes("serving\n")) {
        resolve({
          child,
          async stop() {
            child.kill("SIGTERM");
            await exited;
            const m = /counters (\{.*\})\n/.exec(out);
            if (m === null) throw new Error(`primary process printed no counters: ${out} ${err}`);
            return JSON.parse(m[1]!) as Record<string, number>;
          },
        });
      }
    });
  });
}

const identical = async (a: SmartWalVolume, b: SmartWalVolume) => Buffer.from(await a.read(0, BLOCKS)).equals(Buffer.from(await b.read(0, BLOCKS)));

test.serial("a replica catches up from a primary whose catch-up service runs in another process: WAL records (a large one in pieces) and then an extent delta over several chunks, byte-identical", async (t) => {
  t.timeout(120_000);
  const url = t.context.nats.url;
  const authority = new KeyAuthority("ka", "s-r");
  authority.authorize("rvolc", "w1");
  const key = authority.dataKey("rvolc", "w1");
  const pdir = await primaryVolume();
  const rdir = await newReplicaDir();
  // Ten one-block writes and 12 blocks written at once (one WAL record per block).
  await withVolume(pdir, async (v) => {
    for (let i = 0; i < 10; i++) await v.write(i, fill(1, i + 1));
    await v.write(20, fill(12, 77));
    await v.syncCache();
  });
  let p = await spawnPrimary(url, pdir, "rvolc", key, 4 * BLOCK_SIZE);
  let r = await openReplica(url, "rvolc", rdir, authority);
  const wal = await r.replica.catchUp();
  await r.close();
  let counters = await p.stop();
  t.is(wal.decision, RecoveryDecision.CatchUp);
  t.is(wal.walRecordsReplayed, 22);
  t.is(wal.deltaBlocks, 0);
  t.is(counters.replica_catchup_done, 1);
  t.is(counters.replica_catchup_chunk, 6, "22 one-block records in 4-block chunks");
  const sameAsPrimary = async (what: string) =>
    withVolume(pdir, async (v) => {
      await withVolume(rdir, async (rv) => t.true(await identical(v, rv), what));
      return v.walWindow().head;
    });
  t.is(wal.flushedLsn, await sameAsPrimary("byte-identical after WAL catch-up from another process"));

  // A trim of 8 of those blocks is one WAL record of 8 blocks: with 4-block chunks it travels in 2
  // pieces, and the replica must write both (it still holds the old data there).
  await withVolume(pdir, async (v) => {
    await v.trim(22, 8);
    t.deepEqual((await v.walRecordsAfter(wal.flushedLsn)).map((e) => e.blockCount), [8]);
    await v.syncCache();
  });
  p = await spawnPrimary(url, pdir, "rvolc", key, 4 * BLOCK_SIZE);
  r = await openReplica(url, "rvolc", rdir, authority);
  const trim = await r.replica.catchUp();
  await r.close();
  counters = await p.stop();
  t.is(trim.decision, RecoveryDecision.CatchUp);
  t.is(trim.walRecordsReplayed, 1);
  t.is(counters.replica_catchup_chunk, 2, "one record in two pieces");
  t.is(trim.flushedLsn, await sameAsPrimary("byte-identical after a record sent in pieces"));

  // While the replica is down the primary rewrites 9 blocks and checkpoints: the gap leaves the ring.
  await withVolume(pdir, async (v) => {
    for (let i = 0; i < 9; i++) await v.write(40 + i, fill(1, 150 + i));
    await v.checkpoint();
    await v.syncCache();
  });
  p = await spawnPrimary(url, pdir, "rvolc", key, 4 * BLOCK_SIZE);
  r = await openReplica(url, "rvolc", rdir, authority);
  t.is(r.replica.flushedLsn(), trim.flushedLsn, "the flushed LSN survived the restart");
  const delta = await r.replica.catchUp();
  await r.close();
  counters = await p.stop();
  t.is(delta.decision, RecoveryDecision.DeltaRebuild);
  t.is(delta.deltaBlocks, 9);
  t.is(counters.replica_catchup_chunk, 3, "9 blocks in 4-block chunks");
  t.is(delta.flushedLsn, await sameAsPrimary("byte-identical after an extent delta from another process"));
});

test.serial("a replica the primary does not serve is refused with catchup_not_configured, counted, and nothing is opened or applied", async (t) => {
  const url = t.context.nats.url;
  const authority = new KeyAuthority("ka", "s-r");
  const pdir = await primaryVolume();
  const primary = await SmartWalVolume.open(pdir);
  for (let i = 0; i < 5; i++) await primary.write(i, fill(1, 9));
  const served = await servePrimary(url, primary, authority, { volume: "rvoln", replicas: ["r1"] });
  const r2 = await openReplica(url, "rvoln", await newReplicaDir(), authority, "r2");
  try {
    const err = await t.throwsAsync(r2.replica.catchUp(), { instanceOf: CatchUpRefusedError });
    t.is(err?.code, "catchup_not_configured");
    t.is(served.service.counters.get("replica_catchup_not_configured"), 1);
    t.is(served.service.counters.get("replica_catchup_begun"), 0);
    t.is(served.service.sessionCount(), 0);
    t.is(r2.replica.counters.get("replica_catchup_failed_catchup_not_configured"), 1);
    t.is(r2.replica.flushedLsn(), 0);
    t.is(r2.replica.appliedLsn(), 0);
    t.true(Buffer.from(await r2.vol.read(0, BLOCKS)).equals(Buffer.alloc(BLOCKS * BLOCK_SIZE)), "nothing was written to the refused replica");
  } finally {
    await r2.close();
    await served.close();
    await primary.close();
  }
});

/** One raw request on r1's catch-up subject, from a connection of its own. */
async function ask(t: NatsTransport, volume: string, data: Uint8Array, replica = "r1"): Promise<{ kind: string; body: unknown; data: Uint8Array }> {
  const reply = await t.request(replicaCatchupSubject(volume, replica), data, { timeoutMs: 5000 });
  return { ...decodeAny(reply.data), data: reply.data };
}

test.serial("an abandoned catch-up session expires and is counted; its session is then unknown, and a full service refuses a new one as busy", async (t) => {
  const url = t.context.nats.url;
  const authority = new KeyAuthority("ka", "s-r");
  const primary = await SmartWalVolume.open(await primaryVolume());
  for (let i = 0; i < 5; i++) await primary.write(i, fill(1, 3));
  const served = await servePrimary(url, primary, authority, { volume: "rvole", replicas: ["r1"], sessionTimeoutMs: 200, maxSessions: 1 });
  const raw = await NatsTransport.connect({ servers: url, name: "raw" });
  try {
    const begin = encodeMessage(replicaCatchupBeginSpec, { replica: "r1", volume: "rvole", flushedLsn: 0 });
    const plan = decodeMessage(replicaCatchupPlanSpec, (await ask(raw, "rvole", begin)).data);
    t.is(plan.items, 5);
    t.is(served.service.sessionCount(), 1);
    const busy = await ask(raw, "rvole", begin);
    t.is(decodeMessage(replicaCatchupRefusedSpec, busy.data).code, "catchup_busy");
    t.is(served.service.counters.get("replica_catchup_busy"), 1);
    // Nobody asks for the session's chunks: it expires.
    await until("the abandoned session expired", 10_000, () => served.service.counters.get("replica_catchup_session_expired") === 1, () => JSON.stringify(served.service.counters.snapshot()), 20);
    t.is(served.service.sessionCount(), 0);
    const late = await ask(raw, "rvole", encodeMessage(replicaCatchupNextSpec, { replica: "r1", volume: "rvole", session: plan.session, cursor: 0 }));
    t.is(decodeMessage(replicaCatchupRefusedSpec, late.data).code, "catchup_unknown_session");
    t.is(served.service.counters.get("replica_catchup_unknown_session"), 1);
  } finally {
    await raw.close();
    await served.close();
    await primary.close();
  }
});

test.serial("malformed, mistargeted and unexpected catch-up requests are answered with a typed refusal, counted, and open nothing", async (t) => {
  const url = t.context.nats.url;
  const authority = new KeyAuthority("ka", "s-r");
  const primary = await SmartWalVolume.open(await primaryVolume());
  for (let i = 0; i < 5; i++) await primary.write(i, fill(1, 4));
  const before = primary.walWindow();
  const served = await servePrimary(url, primary, authority, { volume: "rvolm", replicas: ["r1"] });
  const raw = await NatsTransport.connect({ servers: url, name: "raw" });
  const refusal = async (data: Uint8Array) => {
    const a = await ask(raw, "rvolm", data);
    t.is(a.kind, replicaCatchupRefusedSpec.kind);
    return decodeMessage(replicaCatchupRefusedSpec, a.data).code;
  };
  try {
    t.is(await refusal(new Uint8Array([0xc1, 0xff, 0x00])), "malformed");
    const { Encoder } = await import("@msgpack/msgpack");
    t.is(await refusal(new Encoder().encode({ k: "replica-catchup-begin", v: 1, b: { replica: "r1", volume: "rvolm", flushedLsn: 0, extra: true } })), "invalid_field");
    t.is(await refusal(new Encoder().encode({ k: "replica-catchup-begin", v: 1, b: { replica: "r1", volume: "rvolm", flushedLsn: -1 } })), "invalid_field");
    t.is(await refusal(encodeMessage(replicaCatchupBeginSpec, { replica: "r2", volume: "rvolm", flushedLsn: 0 })), "catchup_wrong_target", "a body naming another replica than its subject");
    t.is(await refusal(encodeMessage(replicaBarrierSpec, { replica: "r1", volume: "rvolm", targetLsn: 1 })), "catchup_unexpected_kind");
    t.is(await refusal(encodeMessage(replicaCatchupNextSpec, { replica: "r1", volume: "rvolm", session: "nosuchsession", cursor: 0 })), "catchup_unknown_session");
    const c = served.service.counters;
    t.deepEqual([c.get("replica_catchup_malformed"), c.get("replica_catchup_invalid_field"), c.get("replica_catchup_wrong_target"), c.get("replica_catchup_unexpected_kind"), c.get("replica_catchup_unknown_session")], [1, 2, 1, 1, 1]);
    t.is(c.get("replica_catchup_begun"), 0);
    t.is(served.service.sessionCount(), 0);
    t.deepEqual(primary.walWindow(), before, "no checkpoint or read changed the primary");
  } finally {
    await raw.close();
    await served.close();
    await primary.close();
  }
});

test.serial("a `custody run writer` process configured with replicas serves their catch-up: a replica in this process ends byte-identical to the acknowledged writes", async (t) => {
  t.timeout(120_000);
  const url = t.context.nats.url;
  const authority = new KeyAuthority("ka", "s-r");
  authority.authorize("rvolw", "w1");
  const dir = tempDir("custody-catchup-writer-");
  const dataKeyFile = join(dir, "data.key");
  writeFileSync(dataKeyFile, authority.dataKey("rvolw", "w1"), { mode: 0o600 });
  const ackLog = join(dir, "acks.log");
  const writer = { writerId: "w1", volume: "rvolw", lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: [] }], contracts: [], holderSites: {}, topologyEpoch: 1, policyGeneration: 1, custody: false };
  const file = join(dir, "w1.json");
  writeFileSync(file, JSON.stringify({ role: "writer", nats: { servers: url }, controlRegion: "rc", stateDir: join(dir, "state"), dataKeyFile, volume: { blockCount: BLOCKS }, writer, replicas: ["r1"], workload: { intervalMs: 0, depth: 5, count: 20, ackLog } }));
  // The writer process follows a control log (empty here: custody is off, it has no holders).
  const operator = await NatsTransport.connect({ servers: url, name: "operator" });
  await (await initJetStreamControlLog(operator.connection, { region: "rc" })).log.close();
  await operator.close();
  const p = DeployedProcess.role("w1", "writer", file);
  t.teardown(() => p.signal("SIGKILL", 10_000));
  await p.ready(60_000);
  await until("the writer process acknowledged its 20 writes", 60_000, () => readAckLog(ackLog).length === 20, () => p.log);
  const r = await openReplica(url, "rvolw", await newReplicaDir(), authority);
  try {
    const report = await r.replica.catchUp();
    const acked = readAckLog(ackLog);
    const head = Math.max(...acked.map((a) => a.lsn));
    t.is(report.decision, RecoveryDecision.CatchUp);
    t.is(report.walRecordsReplayed, 20);
    t.is(report.flushedLsn, head);
    const model = acked.map((a) => ({ lsn: a.lsn, lba: a.lba, data: workloadWrite(a.i, 1, BLOCKS).data }));
    t.true(Buffer.from(await r.vol.read(0, BLOCKS)).equals(Buffer.from(contentAt(model, BLOCKS, head))), "byte-identical to the writer process's acknowledged writes");
  } finally {
    await r.close();
  }
});
