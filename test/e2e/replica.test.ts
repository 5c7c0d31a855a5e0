import anyTest, { type TestFn } from "ava";
import { join } from "node:path";
import { startReplica, type Replica } from "../../actors/replica.ts";
import { catchUpReplica } from "../../actors/replica/replica-catch-up.ts";
import { replicaBarrierSpec, replicaFlushedSpec } from "../../actors/replica/replica-messages.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { unitSubject } from "../../transport/subjects.ts";
import { decodeMessage, encodeMessage } from "../../transport/wire/index.ts";
import { RecoveryDecision } from "../../volume/recovery-decision.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { withNatsServer, type NatsTestContext } from "../helpers/index.ts";
import { blockData, e2eHolderConfig, KeyRing, launchHolder, launchWriter, site, tempDir } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const BLOCKS = 64;
const s1 = site("s-r", "us-east", "use1-az2");

async function openReplica(url: string, volume: string, dir: string, authority: KeyAuthority): Promise<{ replica: Replica; vol: SmartWalVolume; t: NatsTransport; close(): Promise<void> }> {
  const vol = await SmartWalVolume.open(dir);
  const t = await NatsTransport.connect({ servers: url, name: "r1" });
  authority.authorize(volume, "r1");
  const replica = await startReplica(
    { replicaId: "r1", volume, lanes: ["l0"], upstream: ["w1"], term: 1 },
    { transport: t, volume: vol, dataKey: authority.dataKey(volume, "r1"), files: nodeFileLayer, positionPath: join(dir, "..", "replica-position") },
  );
  return {
    replica,
    vol,
    t,
    async close() {
      replica.stop();
      await vol.close();
      await t.close();
    },
  };
}

async function newReplicaDir(): Promise<string> {
  const dir = join(tempDir("custody-replica-"), "vol");
  await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 4096 });
  return dir;
}

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
  const primary = { volume: w.volume, walRecordsAfter: (lsn: number) => w.writer.core.walRecordsAfter(lsn) };
  const dir = await newReplicaDir();
  try {
    w.volume.trackPeer("r1");
    for (let i = 0; i < 10; i++) await w.write(i, blockData(i));
    let r = await openReplica(url, "rvol2", dir, authority);
    const first = await catchUpReplica(primary, r.replica.core, "r1");
    t.is(first.decision, RecoveryDecision.CatchUp);
    await r.close(); // the replica goes down

    // Gap inside the WAL window (no checkpoint since): WAL catch-up after restart.
    for (let i = 0; i < 10; i++) await w.write((i * 3) % BLOCKS, blockData(100 + i));
    r = await openReplica(url, "rvol2", dir, authority);
    t.is(r.replica.core.flushedLsn, first.flushedLsn, "the flushed LSN survived the restart");
    const wal = await catchUpReplica(primary, r.replica.core, "r1");
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
    const delta = await catchUpReplica(primary, r.replica.core, "r1");
    t.is(delta.decision, RecoveryDecision.DeltaRebuild);
    t.true(delta.replicaFlushedLsn + 1 < delta.walStart, `R=${delta.replicaFlushedLsn} is outside the window starting at ${delta.walStart}`);
    t.true(delta.deltaBlocks > 0);
    t.is(delta.flushedLsn, w.volume.walWindow().head);
    t.true(Buffer.from(await r.vol.read(0, BLOCKS)).equals(Buffer.from(await w.volume.read(0, BLOCKS))), "byte-identical after extent delta");
    await r.close();
  } finally {
    await w.close();
    await h.close();
  }
});
