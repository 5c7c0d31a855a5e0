import anyTest, { type TestFn } from "ava";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { replicaBarrierSpec, replicaFlushedSpec } from "../../actors/replica/replica-messages.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { unitSubject } from "../../transport/protocol/subjects.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/wire/index.ts";
import { RecoveryDecision } from "../../volume/recovery-decision.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, KeyRing, launchHolder, launchWriter, site, tempDir } from "./e2e-fixture.ts";
import { BLOCKS, newReplicaDir, openReplica, servePrimary } from "./replica-fixture.ts";
import { scriptCommand } from "../kit/script-command.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const s1 = site("s-r", "us-east", "use1-az2");

test.serial("a replica fed by the writer applies every write and answers a barrier with its flushed LSN; it ends byte-identical", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-r");
  const r = await openReplica(url, "rvol1", await newReplicaDir(), authority);
  const w = await launchWriter({ url, writerId: "w1", volume: "rvol1", blockCount: BLOCKS, lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: ["r1"] }], contracts: [], sites: {}, keys, authority });
  try {
    let last = 0;
    for (let i = 0; i < 20; i++) last = await w.write((i * 7) % BLOCKS, blockData(i));
    await w.writer.sync();
    const reply = await w.transport.request(unitSubject("r1", "rvol1", "l0"), encodeMessage(replicaBarrierSpec, { replica: "r1", volume: "rvol1", targetLsn: last }), { timeoutMs: 5000 });
    let flushed = decodeMessage(replicaFlushedSpec, reply.data);
    for (let i = 0; i < 50 && !flushed.reached; i++) {
      await new Promise((res) => setTimeout(res, 20));
      const again = await w.transport.request(unitSubject("r1", "rvol1", "l0"), encodeMessage(replicaBarrierSpec, { replica: "r1", volume: "rvol1", targetLsn: last }), { timeoutMs: 5000 });
      flushed = decodeMessage(replicaFlushedSpec, again.data);
    }
    t.true(flushed.reached);
    t.is(flushed.flushedLsn, last);
    t.true(Buffer.from(await r.vol.read(0, BLOCKS)).equals(Buffer.from(await w.volume.read(0, BLOCKS))));
  } finally {
    await w.close();
    await r.close();
  }
});

test.serial("a replica that was down catches up by WAL inside the WAL window and by extent delta outside it, ending byte-identical to the primary", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-r");
  const h = await launchHolder(url, keys, e2eHolderConfig("h1", s1, "rvol2", [{ lane: "l0", upstream: ["w1"] }]));
  const w = await launchWriter({ url, writerId: "w1", volume: "rvol2", blockCount: BLOCKS, lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: ["h1"] }], contracts: [], sites: {}, keys, authority });
  // The primary's catch-up service beside the writer's volume; the replica asks it over NATS.
  const primary = await servePrimary(url, w.volume, authority, { volume: "rvol2", replicas: ["r1"] });
  const dir = await newReplicaDir();
  try {
    for (let i = 0; i < 10; i++) await w.write(i, blockData(i));
    let r = await openReplica(url, "rvol2", dir, authority);
    const first = await r.replica.catchUp();
    t.is(first.decision, RecoveryDecision.CatchUp);
    await r.close(); // the replica goes down

    // Gap inside the WAL window (no checkpoint since): WAL catch-up after restart.
    for (let i = 0; i < 10; i++) await w.write((i * 3) % BLOCKS, blockData(100 + i));
    r = await openReplica(url, "rvol2", dir, authority);
    t.is(r.replica.flushedLsn(), first.flushedLsn, "the flushed LSN survived the restart");
    const wal = await r.replica.catchUp();
    t.is(wal.decision, RecoveryDecision.CatchUp);
    t.true(wal.walRecordsReplayed > 0);
    t.is(wal.deltaBlocks, 0);
    t.true(Buffer.from(await r.vol.read(0, BLOCKS)).equals(Buffer.from(await w.volume.read(0, BLOCKS))), "byte-identical after WAL catch-up");
    await r.close();

    // Down again; the primary checkpoints, so the WAL no longer holds the gap: extent delta.
    for (let i = 0; i < 10; i++) await w.write((i * 5) % BLOCKS, blockData(200 + i));
    await w.volume.checkpoint();
    for (let i = 0; i < 3; i++) await w.write(40 + i, blockData(300 + i));
    r = await openReplica(url, "rvol2", dir, authority);
    const delta = await r.replica.catchUp();
    t.is(delta.decision, RecoveryDecision.DeltaRebuild);
    t.true(delta.replicaFlushedLsn + 1 < delta.walStart, `R=${delta.replicaFlushedLsn} is outside the window starting at ${delta.walStart}`);
    t.true(delta.deltaBlocks > 0);
    t.is(delta.flushedLsn, w.volume.walWindow().head);
    t.true(Buffer.from(await r.vol.read(0, BLOCKS)).equals(Buffer.from(await w.volume.read(0, BLOCKS))), "byte-identical after extent delta");
    await r.close();
  } finally {
    await primary.close();
    await w.close();
    await h.close();
  }
});

const PRIMARY = new URL("../volume/fixtures/primary-writer.ts", import.meta.url).pathname;

/** Runs the primary as its own process over `ops`, waits for its "synced" line, then SIGKILLs it. */
function primaryRun(dir: string, ops: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const c = scriptCommand(PRIMARY, [dir, ...ops]);
    const child = spawn(c.command, c.args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let synced = -1;
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /synced (\d+)\n/.exec(out);
      if (m && synced < 0) {
        synced = Number(m[1]);
        child.kill("SIGKILL");
      }
    });
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("exit", (code, signal) => (signal === "SIGKILL" && synced >= 0 ? resolve(synced) : reject(new Error(`primary exited ${code} ${signal}: ${err}`))));
  });
}

test.serial("regression #16: after the primary process is SIGKILLed and restarted, a replica catches up from the WAL ring, and by an exact extent delta once the gap left the ring; byte-identical each time", async (t) => {
  t.timeout(300_000);
  const url = t.context.nats.url;
  const authority = new KeyAuthority("ka", "s-r");
  const pdir = join(tempDir("custody-primary-"), "vol");
  await SmartWalVolume.create(pdir, { blockCount: BLOCKS, walCapacity: 4096 });
  const rdir = await newReplicaDir();
  const writes = (from: number, n: number, lba: (i: number) => number) => Array.from({ length: n }, (_, i) => `w${lba(from + i)}:${((from + i) % 250) + 1}`);
  const catchUp = async () => {
    const primary = await SmartWalVolume.open(pdir); // a fresh process's view: recovered from disk only
    const served = await servePrimary(url, primary, authority, { volume: "rvol3", replicas: ["r1"] });
    const r = await openReplica(url, "rvol3", rdir, authority);
    try {
      const report = await r.replica.catchUp();
      return { report, identical: Buffer.from(await r.vol.read(0, BLOCKS)).equals(Buffer.from(await primary.read(0, BLOCKS))) };
    } finally {
      await served.close();
      await primary.close();
      await r.close();
    }
  };

  await primaryRun(pdir, writes(0, 30, (i) => i % BLOCKS));
  const first = await catchUp();
  t.is(first.report.decision, RecoveryDecision.CatchUp);
  t.is(first.report.walRecordsReplayed, 30);
  t.true(first.identical);

  // The primary restarts and writes (and trims) while the replica is down: the ship log of the old
  // process is gone, the ring is not.
  const h1 = await primaryRun(pdir, [...writes(30, 20, (i) => (i * 7) % BLOCKS), "t3:2", ...writes(50, 5, (i) => i % 8)]);
  const second = await catchUp();
  t.is(second.report.decision, RecoveryDecision.CatchUp);
  t.is(second.report.walRecordsReplayed, h1 - first.report.flushedLsn, "every record after R, read back from the ring");
  t.is(second.report.flushedLsn, h1);
  t.true(second.identical, "byte-identical after WAL catch-up across a primary restart");

  // Writes, a checkpoint (the gap leaves the ring), one more write, then a restart: an extent
  // delta of exactly the LBAs changed after R (the delta's own checkpoint takes in LBA 60 too),
  // found from the change LSNs the checkpoints keep.
  const changed = [10, 11, 12, 40, 41];
  await primaryRun(pdir, [...changed.map((l, i) => `w${l}:${200 + i}`), "c", "w60:9"]);
  const third = await catchUp();
  t.is(third.report.decision, RecoveryDecision.DeltaRebuild);
  t.is(third.report.deltaBlocks, changed.length + 1);
  t.true(third.identical, "byte-identical after an extent delta across a primary restart");
});
