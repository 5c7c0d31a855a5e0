import { mkdtemp, open as openFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { BLOCK_SIZE, DamagedBlockError, decodeRecord, RECORD_SIZE, ReplayStop, SmartWalVolume, VolumeFiles, VolumeLayout } from "../../volume/index.ts";

// The `sync-cache` extent barrier on real files with real fdatasync. A power cut that keeps a
// record but not its data is made by hand: the test overwrites the record's extent block, as
// the disk would have left it, between close and reopen.

const block = (fill: number) => new Uint8Array(BLOCK_SIZE).fill(fill);
const opts = { extentBarrier: "sync-cache" as const };

const BLOCKS = 16;
const SPARE = 64; // defaultSpareBlocks(16)

/** Where the extent and the WAL ring live: their files, and the ring's base in its file. */
function placesOf(layout: VolumeLayout): { extent: string; wal: string; walBase: number } {
  if (layout === VolumeLayout.Split) return { extent: VolumeFiles.extent, wal: VolumeFiles.wal, walBase: 0 };
  return { extent: VolumeFiles.data, wal: VolumeFiles.data, walBase: (BLOCKS + SPARE) * BLOCK_SIZE };
}

async function freshVolume(layout: VolumeLayout): Promise<{ root: string; dir: string; at: ReturnType<typeof placesOf> }> {
  const root = await mkdtemp(join(tmpdir(), "deferred-barrier-"));
  const dir = join(root, "v");
  const g = await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 64, layout });
  if (g.physicalBlocks !== BLOCKS + SPARE) throw new Error(`unexpected extent of ${g.physicalBlocks} blocks`);
  return { root, dir, at: placesOf(layout) };
}

/** Byte offset in the extent of the data named by the record with `lsn` (read from the ring). */
async function extentOffsetOf(dir: string, at: ReturnType<typeof placesOf>, lsn: number): Promise<number> {
  const f = await openFile(join(dir, at.wal), "r");
  const slot = new Uint8Array(RECORD_SIZE);
  await f.read(slot, 0, RECORD_SIZE, at.walBase + (lsn - 1) * RECORD_SIZE);
  await f.close();
  const r = decodeRecord(slot);
  if (typeof r === "string" || r.lsn !== lsn) throw new Error(`no record ${lsn} in the ring`);
  return r.physicalOffset;
}

/** Overwrites `bytes` at `offset` of a volume file and fdatasyncs it. */
async function overwrite(dir: string, name: string, offset: number, bytes: Uint8Array): Promise<void> {
  const f = await openFile(join(dir, name), "r+");
  await f.write(bytes, 0, bytes.length, offset);
  await f.datasync();
  await f.close();
}

async function coveredLostBlock(t: ExecutionContext, layout: VolumeLayout): Promise<void> {
  const { root, dir, at } = await freshVolume(layout);
  try {
    const vol = await SmartWalVolume.open(dir, opts);
    await vol.write(3, block(0x33));
    await vol.write(5, block(0x55));
    t.is(await vol.syncCache(), 2);
    await vol.close();
    // No record carries a watermark yet: only the sync mark tells recovery these two were covered.
    await overwrite(dir, at.extent, await extentOffsetOf(dir, at, 1), block(0xee));
    const again = await SmartWalVolume.open(dir, opts);
    try {
      t.is(again.recovery.extentCoveredLsn, 2);
      t.is(again.recovery.unsyncedCutRecords, 0);
      t.is(again.recovery.lastLsn, 2);
      t.deepEqual(again.recovery.damaged, [{ lba: 3, lsn: 1 }]);
      await t.throwsAsync(again.read(3), { instanceOf: DamagedBlockError });
      t.deepEqual(await again.read(5), block(0x55));
    } finally {
      await again.close();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function uncoveredLostBlock(t: ExecutionContext, layout: VolumeLayout): Promise<void> {
  const { root, dir, at } = await freshVolume(layout);
  try {
    const vol = await SmartWalVolume.open(dir, opts);
    await vol.write(3, block(0x31));
    t.is(await vol.syncCache(), 1);
    t.is(await vol.write(3, block(0x32)), 2);
    t.is(await vol.write(7, block(0x77)), 3); // its data is intact, but it follows the hole
    await vol.close();
    await overwrite(dir, at.extent, await extentOffsetOf(dir, at, 2), block(0));
    const again = await SmartWalVolume.open(dir, opts);
    try {
      const r = again.recovery;
      t.is(r.lastLsn, 1);
      t.is(r.stopReason, ReplayStop.UnsyncedData);
      t.is(r.unsyncedCutRecords, 2);
      t.is(r.erasedTailRecords, 2);
      t.deepEqual(r.damaged, []);
      t.deepEqual(r.lostRecords, []);
      t.deepEqual(await again.read(3), block(0x31), "the SyncCache-acknowledged version");
      t.deepEqual(await again.read(7), block(0), "a later write is not replayed over the hole");
      t.is(await again.write(9, block(0x99)), 2);
      await again.syncCache();
    } finally {
      await again.close();
    }
    const third = await SmartWalVolume.open(dir, opts);
    try {
      t.is(third.recovery.lastLsn, 2);
      t.deepEqual(third.recovery.damaged, []);
      t.deepEqual(await third.read(9), block(0x99));
    } finally {
      await third.close();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function staleMark(t: ExecutionContext, layout: VolumeLayout): Promise<void> {
  const { root, dir, at } = await freshVolume(layout);
  try {
    const vol = await SmartWalVolume.open(dir, opts);
    await vol.write(1, block(0x11));
    await vol.write(2, block(0x22));
    t.is(await vol.syncCache(), 2);
    await vol.close();
    // As if the power cut kept the mark (LSN 2) but not record 2: the log ends at LSN 1.
    await overwrite(dir, at.wal, at.walBase + RECORD_SIZE, new Uint8Array(RECORD_SIZE));
    const second = await SmartWalVolume.open(dir, opts);
    t.is(second.recovery.lastLsn, 1);
    t.is(await second.write(4, block(0x44)), 2); // LSN 2 again, never synced
    await second.close();
    await overwrite(dir, at.extent, await extentOffsetOf(dir, at, 2), block(0));
    const third = await SmartWalVolume.open(dir, opts);
    try {
      t.is(third.recovery.extentCoveredLsn, 1);
      t.is(third.recovery.lastLsn, 1);
      t.is(third.recovery.unsyncedCutRecords, 1);
      t.deepEqual(third.recovery.damaged, []);
      t.deepEqual(await third.read(1), block(0x11));
      t.deepEqual(await third.read(4), block(0));
    } finally {
      await third.close();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

test("extent barrier at SyncCache: a write a SyncCache covered whose extent block is later lost is reported damaged, not cut from the log", (t) =>
  coveredLostBlock(t, VolumeLayout.Split));
// One file: the mark naming LSN 2 is written right after the SyncCache's one fdatasync; without a
// power cut (this test closes and reopens) it is in the file, so the lost block is damage here too.
test("extent barrier at SyncCache (one file): a write a SyncCache covered whose extent block is later lost is reported damaged, not cut from the log", (t) =>
  coveredLostBlock(t, VolumeLayout.OneFile));
test("extent barrier at SyncCache: a write no SyncCache covered whose data never reached the extent is cut with every later record, and the next write continues at its LSN", (t) =>
  uncoveredLostBlock(t, VolumeLayout.Split));
test("extent barrier at SyncCache (one file): a write no SyncCache covered whose data never reached the extent is cut with every later record, and the next write continues at its LSN", (t) =>
  uncoveredLostBlock(t, VolumeLayout.OneFile));
test("regression: a sync mark past the recovered end is moved back at mount, so a later unsynced write at a reused LSN is cut, not reported as damage", (t) =>
  staleMark(t, VolumeLayout.Split));
test("regression (one file): a sync mark past the recovered end is moved back at mount, so a later unsynced write at a reused LSN is cut, not reported as damage", (t) =>
  staleMark(t, VolumeLayout.OneFile));
