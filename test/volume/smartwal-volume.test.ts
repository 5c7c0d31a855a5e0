import test from "ava";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import type { FileHandleLike, FileLayer } from "../../core/file-layer.ts";
import { BLOCK_SIZE, DamagedBlockError, RecoverabilityClass, SmartWalVolume, VolumeLayout, VolumeMode, type VolumeMode as Mode } from "../../volume/index.ts";

const blk = (fill: number, n = 1) => new Uint8Array(n * BLOCK_SIZE).fill(fill);

async function fresh(mode: Mode, opts: { blockCount?: number; walCapacity?: number; spareBlocks?: number; maxBatch?: number } = {}) {
  const fl = new CrashFileLayer();
  await SmartWalVolume.create("/v", { blockCount: opts.blockCount ?? 16, mode, walCapacity: opts.walCapacity ?? 64, spareBlocks: opts.spareBlocks ?? 16, layout: VolumeLayout.Split }, fl);
  // These tests pin the per-batch barrier's I/O order; the SyncCache barrier has its own tests.
  const vol = await SmartWalVolume.open("/v", { fileLayer: fl, maxBatch: opts.maxBatch ?? 64, extentBarrier: "per-batch" });
  return { fl, vol };
}

for (const mode of [VolumeMode.SmartWal, VolumeMode.Inline]) {
  test(`${mode}: multi-block writes read back, trimmed blocks read as zeros, and LSNs are consecutive`, async (t) => {
    const { vol } = await fresh(mode);
    const a = await vol.write(2, blk(7, 3));
    const b = await vol.trim(3);
    t.is(a, 3);
    t.is(b, 4);
    t.deepEqual(await vol.read(2, 3), Uint8Array.from([...blk(7), ...blk(0), ...blk(7)]));
    t.deepEqual(await vol.read(0), blk(0));
    await vol.close();
  });

  test(`${mode}: concurrent writes to the same LBA keep submission order (G8) and the last one is read`, async (t) => {
    const { vol } = await fresh(mode);
    const lsns = await Promise.all([1, 2, 3, 4, 5].map((f) => vol.write(9, blk(f))));
    t.deepEqual(lsns, [1, 2, 3, 4, 5]);
    t.deepEqual(await vol.read(9), blk(5));
    await vol.syncCache();
    await vol.close();
  });

  test(`${mode}: a synced volume reopens with every block, after the ring wrapped many times (G5)`, async (t) => {
    const { fl, vol } = await fresh(mode, { blockCount: 8, walCapacity: 8, spareBlocks: 4 });
    const expect = new Map<number, number>();
    for (let i = 0; i < 200; i++) {
      const lba = (i * 5) % 8;
      await vol.write(lba, blk(i % 251));
      expect.set(lba, i % 251);
      if (i % 3 === 0) await vol.syncCache();
    }
    await vol.syncCache();
    t.true(vol.stats().checkpoints > 10);
    await vol.close();
    const again = await SmartWalVolume.open("/v", { fileLayer: fl.crashAt(fl.opCount()) });
    for (const [lba, fill] of expect) t.deepEqual(await again.read(lba), blk(fill));
    t.deepEqual(again.recovery.damaged, []);
    await again.close();
  });
}

test("group commit: 16 concurrent writes share one extent fdatasync and one WAL fsync", async (t) => {
  const { vol } = await fresh(VolumeMode.SmartWal);
  await Promise.all([...Array.from({ length: 16 }, (_, i) => vol.write(i, blk(i + 1))), vol.syncCache()]);
  const s = vol.stats();
  t.is(s.extentSyncs, 1);
  t.is(s.walSyncs, 1);
  t.is(s.walBytes, 16 * 64);
  await vol.close();
});

test("group commit: maxBatch bounds how many writes share a barrier", async (t) => {
  const { vol } = await fresh(VolumeMode.SmartWal, { maxBatch: 4 });
  await Promise.all(Array.from({ length: 16 }, (_, i) => vol.write(i, blk(1))));
  t.is(vol.stats().extentSyncs, 4);
  await vol.close();
});

test("I1: every WAL record write comes after an extent fdatasync that follows the data it references", async (t) => {
  const events: string[] = [];
  const inner = new CrashFileLayer();
  const spy: FileLayer = {
    ...inner,
    open: async (path, opts) => {
      const h = await inner.open(path, opts);
      const name = path.split("/").pop()!;
      const wrapped: FileHandleLike = {
        path,
        read: (...a) => h.read(...a),
        write: async (...a) => {
          await h.write(...a);
          events.push(`write:${name}`);
        },
        datasync: async () => {
          await h.datasync();
          events.push(`sync:${name}`);
        },
        sync: () => h.sync(),
        truncate: (n) => h.truncate(n),
        size: () => h.size(),
        close: () => h.close(),
      };
      return wrapped;
    },
    exists: (p) => inner.exists(p),
    mkdirp: (p) => inner.mkdirp(p),
    rename: (a, b) => inner.rename(a, b),
    unlink: (p) => inner.unlink(p),
    readdir: (p) => inner.readdir(p),
    syncDir: (p) => inner.syncDir(p),
  };
  await SmartWalVolume.create("/v", { blockCount: 16, walCapacity: 64, spareBlocks: 8, layout: VolumeLayout.Split }, spy);
  const vol = await SmartWalVolume.open("/v", { fileLayer: spy, maxBatch: 3, extentBarrier: "per-batch" });
  events.length = 0;
  for (let r = 0; r < 5; r++) {
    await Promise.all(Array.from({ length: 7 }, (_, i) => vol.write((i * 3 + r) % 16, blk(r + i))));
    await vol.syncCache();
  }
  await vol.close();
  let unsyncedExtent = 0;
  let walWrites = 0;
  for (const e of events) {
    if (e === "write:extent.dat") unsyncedExtent++;
    if (e === "sync:extent.dat") unsyncedExtent = 0;
    if (e === "write:wal.ring") {
      walWrites++;
      t.is(unsyncedExtent, 0, "a WAL record was written while extent data was not yet synced");
    }
  }
  t.true(walWrites >= 5);
});

test("syncCache returns the durable LSN and the durability proof names both barriers", async (t) => {
  const { vol } = await fresh(VolumeMode.SmartWal);
  await vol.write(0, blk(1));
  const last = await vol.write(1, blk(2));
  t.is(await vol.syncCache(), last);
  const proof = vol.durabilityProof();
  t.is(proof.durableLsn, last);
  t.deepEqual(proof.barriers, ["extent_fdatasync", "wal_fsync"]);
  t.is(vol.recoverabilityOf(last), RecoverabilityClass.ExtentReferenced);
  await vol.checkpoint();
  t.is(vol.recoverabilityOf(last), RecoverabilityClass.SnapshotBased);
  await vol.close();
});

test("a synced write followed by a torn unsynced overwrite of the same LBA reads back the old bytes, never damage", async (t) => {
  const { fl, vol } = await fresh(VolumeMode.SmartWal, { blockCount: 4, spareBlocks: 4 });
  await vol.write(1, blk(0xaa));
  await vol.syncCache();
  const before = fl.opCount();
  await vol.write(1, blk(0xbb)); // CoW: lands in a different physical block
  // The overwrite's extent pwrite is the first op after `before`; look right after it, before its barrier.
  const torn = fl.pendingWritesAt(before + 1).filter((w) => w.path.endsWith("extent.dat") && w.id >= before);
  t.is(torn.length, 1);
  // Power cut after the overwrite's pwrite but before its barrier: half its sectors land.
  const at = torn[0]!.id + 1;
  const crashed = fl.crashAt(at, { keep: "all", tear: new Map([[torn[0]!.id, [0, 2, 4, 6]]]) });
  const again = await SmartWalVolume.open("/v", { fileLayer: crashed });
  t.deepEqual(again.recovery.damaged, []);
  t.deepEqual(await again.read(1), blk(0xaa));
  await again.close();
  await vol.close();
});

test("I4: at mount the free map is rebuilt from the index, so orphaned CoW blocks are free again", async (t) => {
  const { fl, vol } = await fresh(VolumeMode.SmartWal, { blockCount: 8, spareBlocks: 8 });
  for (let i = 0; i < 8; i++) await vol.write(i, blk(i + 1));
  await vol.syncCache();
  const synced = fl.opCount();
  await Promise.all([0, 1, 2].map((i) => vol.write(i, blk(50 + i)))); // admitted, never synced
  const crashed = fl.crashAt(fl.opCount() - 1, { keep: "all" }); // before the WAL write of the last group
  t.true(fl.opCount() - 1 > synced);
  const again = await SmartWalVolume.open("/v", { fileLayer: crashed });
  t.is(again.stats().freeBlocks, 16 - 8);
  for (let i = 0; i < 8; i++) t.deepEqual(await again.read(i), blk(i + 1));
  await again.close();
  await vol.close();
});

test("a checkpoint-consistent read returns the snapshot even while the LBA is overwritten (G4)", async (t) => {
  const { vol } = await fresh(VolumeMode.SmartWal);
  const peer = vol.trackPeer("replica-a");
  await vol.write(5, blk(1));
  await vol.write(6, blk(2));
  const delta = await vol.readDelta("replica-a");
  await vol.write(5, blk(9));
  await vol.syncCache();
  const again = await vol.readCheckpointConsistent([5, 6, 7]);
  t.deepEqual(delta.blocks.map((b) => b.lba), [5, 6]);
  t.deepEqual(again.blocks[0]!.data, blk(1));
  t.is(again.blocks[2]!.data, null);
  t.deepEqual(await vol.read(5), blk(9));
  peer.confirm(delta.checkpointLsn);
  t.deepEqual(peer.dirtyLbas(), [5]);
  await vol.close();
});

test("a block corrupted behind the volume's back fails its read with DamagedBlockError and is counted", async (t) => {
  const { fl, vol } = await fresh(VolumeMode.SmartWal, { blockCount: 4, spareBlocks: 4 });
  await vol.write(2, blk(3));
  await vol.syncCache();
  await vol.checkpoint();
  await vol.close();
  const files = fl.snapshotFiles();
  const extent = files.get("/v/extent.dat")!;
  for (let i = 0; i < extent.length; i++) if (extent[i] === 3) extent[i] = 4;
  const again = await SmartWalVolume.open("/v", { fileLayer: new CrashFileLayer(files) });
  const err = await t.throwsAsync(again.read(2), { instanceOf: DamagedBlockError });
  t.is(err.code, "volume_block_damaged");
  t.deepEqual(again.damagedLbas(), [2]);
  t.is(again.rejected()["volume_block_damaged"], 1);
  await again.close();
});

test("scrub at mount reports a corrupted checkpoint-named block in the recovery report", async (t) => {
  const { fl, vol } = await fresh(VolumeMode.SmartWal, { blockCount: 4, spareBlocks: 4 });
  await vol.write(0, blk(3));
  await vol.checkpoint();
  await vol.close();
  const files = fl.snapshotFiles();
  const extent = files.get("/v/extent.dat")!;
  for (let i = 0; i < extent.length; i++) if (extent[i] === 3) extent[i] = 0;
  const again = await SmartWalVolume.open("/v", { fileLayer: new CrashFileLayer(files), scrub: true });
  t.deepEqual(again.recovery.damaged.map((d) => d.lba), [0]);
  t.is(again.recovery.scrubbedBlocks, 1);
  await again.close();
});
