import test from "ava";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import { runCliCaptured } from "../../cli/program.ts";
import {
  BadRequestError,
  BLOCK_SIZE,
  decodeHeader,
  FileSizeError,
  HeaderCorruptError,
  inspectVolume,
  SmartWalVolume,
  VolumeFiles,
  VolumeLayout,
} from "../../volume/index.ts";

const blk = (fill: number) => new Uint8Array(BLOCK_SIZE).fill(fill);

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "one-file-"));
}

test("the layout is header byte 49: 0 (what every older volume holds) reads as split, 1 as one file, anything else is HeaderCorruptError", async (t) => {
  for (const layout of [VolumeLayout.Split, VolumeLayout.OneFile]) {
    const fl = new CrashFileLayer();
    await SmartWalVolume.create("/v", { blockCount: 8, layout }, fl);
    const header = fl.snapshotFiles().get(`/v/${VolumeFiles.header}`)!;
    t.is(header[49], layout === VolumeLayout.Split ? 0 : 1);
    t.is(decodeHeader(header).layout, layout);
  }
  const fl = new CrashFileLayer();
  await SmartWalVolume.create("/v", { blockCount: 8 }, fl);
  const header = fl.snapshotFiles().get(`/v/${VolumeFiles.header}`)!;
  header[49] = 7;
  new DataView(header.buffer).setUint32(60, crc32(header.subarray(0, 60)) >>> 0, true);
  t.throws(() => decodeHeader(header), { instanceOf: HeaderCorruptError, message: /layout code 7/ });
});

test("a one-file volume is volume.dat (extent, then a 4 KiB-aligned WAL region with the mark sector) beside header and checkpoints; a short volume.dat is FileSizeError", async (t) => {
  const fl = new CrashFileLayer();
  const g = await SmartWalVolume.create("/v", { blockCount: 8, walCapacity: 100, spareBlocks: 8, layout: VolumeLayout.OneFile }, fl);
  const files = fl.snapshotFiles();
  t.deepEqual([...files.keys()].sort(), ["/v/checkpoint.0", "/v/checkpoint.1", "/v/volume.dat", "/v/volume.hdr"]);
  // Ring 6,400 B → mark sector at 6,656 → region 8,192 B after the 16 extent blocks.
  t.is(files.get("/v/volume.dat")!.length, g.physicalBlocks * BLOCK_SIZE + 8192);
  files.set("/v/volume.dat", files.get("/v/volume.dat")!.subarray(0, g.physicalBlocks * BLOCK_SIZE + 4096));
  await t.throwsAsync(SmartWalVolume.open("/v", { fileLayer: new CrashFileLayer(files) }), { instanceOf: FileSizeError });
});

test("an unknown layout is refused at create with BadRequestError and nothing is written", async (t) => {
  const fl = new CrashFileLayer();
  await t.throwsAsync(SmartWalVolume.create("/v", { blockCount: 8, layout: "three-files" as VolumeLayout }, fl), { instanceOf: BadRequestError });
  t.is(fl.snapshotFiles().size, 0);
});

test("one file on real files: a SyncCache with the deferred barrier issues ONE fdatasync (split: two), data and records survive a reopen, the proof names the shared barrier", async (t) => {
  const root = await tempDir();
  try {
    const syncsPerSyncCache: Record<string, number> = {};
    for (const layout of [VolumeLayout.Split, VolumeLayout.OneFile]) {
      const dir = join(root, layout);
      await SmartWalVolume.create(dir, { blockCount: 64, walCapacity: 256, layout });
      const vol = await SmartWalVolume.open(dir, { extentBarrier: "sync-cache" });
      const base = vol.stats();
      for (let round = 0; round < 5; round++) {
        await Promise.all([0, 1, 2, 3].map((k) => vol.write(round * 4 + k, blk(round * 4 + k + 1))));
        t.is(await vol.syncCache(), (round + 1) * 4);
      }
      const s = vol.stats();
      syncsPerSyncCache[layout] = (s.extentSyncs + s.walSyncs - base.extentSyncs - base.walSyncs) / 5;
      t.deepEqual(vol.durabilityProof().barriers, layout === VolumeLayout.OneFile ? ["shared_fdatasync"] : ["extent_fdatasync", "wal_fsync"]);
      await vol.close();
      const again = await SmartWalVolume.open(dir, { extentBarrier: "sync-cache" });
      try {
        t.is(again.recovery.lastLsn, 20);
        t.deepEqual(again.recovery.damaged, []);
        for (let lba = 0; lba < 20; lba++) t.deepEqual(await again.read(lba), blk(lba + 1));
      } finally {
        await again.close();
      }
    }
    t.deepEqual(syncsPerSyncCache, { split: 2, "one-file": 1 });
    t.deepEqual((await readdir(join(root, "one-file"))).sort(), ["checkpoint.0", "checkpoint.1", "volume.dat", "volume.hdr"]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("one file: blocks superseded since the last durable mark are not reused, so a power cut that keeps a reused block's new data never cuts SyncCache-acknowledged writes", async (t) => {
  // Tiny spare: the allocator must reuse blocks at once. Every crash point after the last
  // SyncCache, keeping all data pwrites and dropping all WAL writes, must recover its LSN.
  const fl = new CrashFileLayer();
  await SmartWalVolume.create("/v", { blockCount: 2, walCapacity: 64, spareBlocks: 2, layout: VolumeLayout.OneFile }, fl);
  const vol = await SmartWalVolume.open("/v", { fileLayer: fl, extentBarrier: "sync-cache", maxBatch: 1 });
  const acks: [number, number][] = [];
  // Two writes to one LBA per SyncCache: the first is superseded inside the interval, past the mark.
  for (let i = 0; i < 12; i++) {
    await vol.write(i % 2, blk(2 * i + 1));
    await vol.write(i % 2, blk(2 * i + 2));
    const durable = await vol.syncCache();
    acks.push([fl.opCount(), durable]);
  }
  await vol.close();
  const extentEnd = 4 * BLOCK_SIZE;
  let checked = 0;
  for (let at = acks[0]![0]; at <= fl.opCount(); at++) {
    const acked = Math.max(...acks.filter(([op]) => op <= at).map(([, lsn]) => lsn));
    const data = new Set(fl.pendingWritesAt(at).filter((p) => p.position < extentEnd).map((p) => p.id));
    const crashed = await SmartWalVolume.open("/v", { fileLayer: fl.crashAt(at, { keep: (id) => data.has(id) }), extentBarrier: "sync-cache" });
    try {
      t.true(crashed.recovery.lastLsn >= acked, `op ${at}: recovered ${crashed.recovery.lastLsn} < acknowledged ${acked}`);
      t.deepEqual(crashed.recovery.damaged, []);
      t.deepEqual(await crashed.read((acked / 2 - 1) % 2), blk(acked));
      checked++;
    } finally {
      await crashed.close();
    }
  }
  t.true(checked > 20);
});

test("regression (both layouts): a write one recovery replayed survives a second power cut after the mount reused the block it superseded", async (t) => {
  // Two deferred writes to LBA 0 land without any SyncCache; recovery replays both, and the mount
  // frees the first one's block. Recovery therefore leaves a durable mark at its end: without it
  // the next recovery checked the first record against the block's new owner and cut both.
  for (const layout of [VolumeLayout.Split, VolumeLayout.OneFile]) {
    const fl = new CrashFileLayer();
    await SmartWalVolume.create("/v", { blockCount: 4, walCapacity: 16, spareBlocks: 4, layout }, fl);
    const vol = await SmartWalVolume.open("/v", { fileLayer: fl, extentBarrier: "sync-cache" });
    await vol.write(0, blk(0xa));
    await vol.write(0, blk(0xb));
    await vol.close();
    const first = fl.crashAt(fl.opCount(), { keep: "all" });
    const mounted = await SmartWalVolume.open("/v", { fileLayer: first, extentBarrier: "sync-cache" });
    t.is(mounted.recovery.lastLsn, 2);
    await mounted.write(1, blk(0xc)); // next-fit from block 0: the block LSN 1 used
    await mounted.close();
    const data = (p: { path: string; position: number }) => p.path.endsWith(VolumeFiles.extent) || (p.path.endsWith(VolumeFiles.data) && p.position < 8 * BLOCK_SIZE);
    const keep = new Set(first.pendingWritesAt(first.opCount()).filter(data).map((p) => p.id));
    const second = await SmartWalVolume.open("/v", { fileLayer: first.crashAt(first.opCount(), { keep: (id) => keep.has(id) }), extentBarrier: "sync-cache" });
    try {
      t.is(second.recovery.lastLsn, 2, layout);
      t.is(second.recovery.unsyncedCutRecords, 0, layout);
      t.deepEqual(await second.read(0), blk(0xb), layout);
    } finally {
      await second.close();
    }
  }
});

test("inspect and the CLI: create --layout one-file makes volume.dat, inspect shows the layout and reads the ring from it; a bad --layout is one typed error line", async (t) => {
  const root = await tempDir();
  try {
    const v = join(root, "v");
    const created = await runCliCaptured(["volume", "create", v, "--blocks", "32", "--layout", "one-file", "--json"]);
    t.is(created.code, 0);
    t.is(JSON.parse(created.stdout.trim().split("\n").pop()!).layout, "one-file");
    t.is((await runCliCaptured(["volume", "write", v, "--lba", "3", "--fill", "7", "--blocks", "2"])).code, 0);
    const ins = await inspectVolume((await import("../../core/index.ts")).nodeFileLayer, v);
    t.is(ins.geometry.layout, VolumeLayout.OneFile);
    t.is(ins.ring.validRecords, 2);
    t.is(ins.files[VolumeFiles.data], (await stat(join(v, VolumeFiles.data))).size);
    t.false(VolumeFiles.extent in ins.files);
    const bad = await runCliCaptured(["volume", "create", join(root, "w"), "--blocks", "8", "--layout", "striped"]);
    t.is(bad.code, 1);
    t.regex(bad.stderr, /^error \[volume_bad_request\]: --layout must be split or one-file/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
