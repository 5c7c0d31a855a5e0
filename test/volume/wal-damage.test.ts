import test from "ava";
import { spawnSync } from "node:child_process";
import { mkdtemp, open as openFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { custodyCommand } from "../kit/index.ts";
import { BLOCK_SIZE, DamagedBlockError, SmartWalVolume, VolumeFiles, VolumeLayout, WalDamagedError } from "../../volume/index.ts";

// Issue #16 item 4 on real files with real fdatasync. Write i (0-based) goes to LBA i mod 1000 with
// its own bytes, so LSN 1023 is LBA 22, LSN 1024 is LBA 23 and LSN 1025 is LBA 24.
const custody = (...args: string[]) => {
  const c = custodyCommand(["volume", ...args]);
  return spawnSync(c.command, c.args, { encoding: "utf8" });
};
const lastJson = (out: string) => JSON.parse(out.trim().split("\n").pop()!);
const dataOf = (i: number) => {
  const b = new Uint8Array(BLOCK_SIZE);
  new DataView(b.buffer).setUint32(0, i + 1, true);
  b.fill((i % 251) + 1, 4);
  return b;
};

/** A volume in a temp dir after `writes` writes, each followed by a syncCache (every ack is a durability proof). */
async function syncedVolume(writes: number): Promise<{ root: string; dir: string }> {
  const root = await mkdtemp(join(tmpdir(), "wal-damage-"));
  const dir = join(root, "v");
  await SmartWalVolume.create(dir, { blockCount: 1000, walCapacity: 1024, layout: VolumeLayout.Split });
  // Per-batch barrier: no sync mark after the ring, so the file's last bytes are the last records.
  const vol = await SmartWalVolume.open(dir, { extentBarrier: "per-batch" });
  for (let i = 0; i < writes; i++) {
    await vol.write(i % 1000, dataOf(i));
    await vol.syncCache();
  }
  await vol.close();
  return { root, dir };
}

/** Overwrites the last `n` bytes of wal.ring with `fill` (and fdatasyncs), as a failing disk would. */
async function damageRingTail(dir: string, n: number, fill: number): Promise<void> {
  const f = await openFile(join(dir, VolumeFiles.wal), "r+");
  const { size } = await f.stat();
  await f.write(new Uint8Array(n).fill(fill), 0, n, size - n);
  await f.datasync();
  await f.close();
}

for (const fill of [0xa5, 0x00]) {
  test(`regression #16: after 1,024 synced writes with the last 100 bytes of wal.ring overwritten (0x${fill.toString(16)}), recover exits 1 naming LSNs 1023 and 1024 instead of reverting LBAs 22 and 23`, async (t) => {
    t.timeout(600_000);
    const { root, dir } = await syncedVolume(1024);
    try {
      await damageRingTail(dir, 100, fill);
      const refused = custody("recover", dir, "--json");
      t.is(refused.status, 1);
      t.regex(refused.stderr, /^error \[volume_wal_damaged\]: /);
      const report = lastJson(refused.stdout);
      t.is(report.error, "volume_wal_damaged");
      t.deepEqual(report.lostRecords.map((l: { lsn: number }) => l.lsn), [1023, 1024]);
      const err = await t.throwsAsync(SmartWalVolume.open(dir), { instanceOf: WalDamagedError });
      t.deepEqual(err?.lostLsns, [1023, 1024], "refusing wrote nothing: the same report again");
      // Accepting the loss mounts; the acceptance is checkpointed, so the next mount is clean.
      const accepted = lastJson(custody("recover", dir, "--accept-loss", "--json").stdout);
      t.true(accepted.lossAccepted);
      t.is(accepted.nextLsn, 1025);
      const vol = await SmartWalVolume.open(dir);
      t.deepEqual(vol.recovery.lostRecords, []);
      t.deepEqual(await vol.read(21), dataOf(1021));
      await vol.close();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
}

test("regression #16: with 1,025 synced writes and the same damage, the valid record for LSN 1025 after it is never erased", async (t) => {
  t.timeout(600_000);
  const { root, dir } = await syncedVolume(1025);
  try {
    await damageRingTail(dir, 100, 0xa5);
    const err = await t.throwsAsync(SmartWalVolume.open(dir), { instanceOf: WalDamagedError });
    t.deepEqual(err?.lostLsns, [1023, 1024]);
    t.is(err?.report?.durableProofLsn, 1024, "record 1025's watermark proves 1023 and 1024 were durable");
    t.is(err?.report?.lastLsn, 1025);
    const vol = await SmartWalVolume.open(dir, { acceptLoss: true });
    t.is(vol.recovery.lastLsn, 1025);
    t.is(vol.recovery.erasedTailRecords, 0);
    t.deepEqual(await vol.read(24), dataOf(1024), "LBA 24 holds the write of LSN 1025");
    await vol.close();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("a true torn tail (a lost sector of unsynced records, later sectors on disk) still recovers silently to the synced prefix", async (t) => {
  t.timeout(600_000);
  const { root, dir } = await syncedVolume(100);
  try {
    const vol = await SmartWalVolume.open(dir);
    for (let i = 100; i < 130; i++) await vol.write(i % 1000, dataOf(i)); // admitted, never synced
    await vol.close();
    // Power cut: the sector holding LSNs 105..112 (slots 104..111) never reached the disk; the
    // sectors after it did. Nothing after LSN 100 was durable, so this is a tail, not damage.
    const f = await openFile(join(dir, VolumeFiles.wal), "r+");
    await f.write(new Uint8Array(512), 0, 512, 104 * 64);
    await f.close();
    const again = await SmartWalVolume.open(dir);
    t.deepEqual(again.recovery.lostRecords, []);
    t.is(again.recovery.stopReason, "empty");
    t.is(again.recovery.lastLsn, 104);
    t.is(again.recovery.erasedTailRecords, 130 - 112, "records after the hole were never durable and are erased");
    for (let i = 0; i < 104; i++) t.deepEqual(await again.read(i), dataOf(i));
    for (let i = 104; i < 130; i++) t.true((await again.read(i)).every((b) => b === 0));
    await again.close();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("damage found by a scrub persists across remounts until the LBA is rewritten", async (t) => {
  t.timeout(300_000);
  const root = await mkdtemp(join(tmpdir(), "wal-scrub-"));
  const dir = join(root, "v");
  try {
    await SmartWalVolume.create(dir, { blockCount: 16, walCapacity: 64, layout: VolumeLayout.Split });
    let vol = await SmartWalVolume.open(dir);
    for (let i = 0; i < 8; i++) await vol.write(i, dataOf(i));
    await vol.checkpoint();
    await vol.close();
    // Bit-rot in the extent block behind LBA 5 (found by its distinctive bytes).
    const f = await openFile(join(dir, VolumeFiles.extent), "r+");
    const extent = new Uint8Array((await f.stat()).size);
    await f.read(extent, 0, extent.length, 0);
    const at = Buffer.from(extent).indexOf(Buffer.from(dataOf(5)));
    t.true(at >= 0 && at % BLOCK_SIZE === 0);
    await f.write(new Uint8Array([0xff]), 0, 1, at + 100);
    await f.close();

    vol = await SmartWalVolume.open(dir, { scrub: true });
    t.deepEqual(vol.recovery.damaged.map((d) => d.lba), [5]);
    await vol.close();
    vol = await SmartWalVolume.open(dir); // no scrub this time
    t.deepEqual(vol.recovery.knownDamaged, [5]);
    await t.throwsAsync(vol.read(5), { instanceOf: DamagedBlockError, code: "volume_block_damaged" });
    t.deepEqual(await vol.read(4), dataOf(4));
    await vol.write(5, dataOf(500)); // repair by rewriting
    await vol.syncCache();
    await vol.close();
    vol = await SmartWalVolume.open(dir);
    t.deepEqual(vol.recovery.knownDamaged, []);
    t.deepEqual(await vol.read(5), dataOf(500));
    await vol.close();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
