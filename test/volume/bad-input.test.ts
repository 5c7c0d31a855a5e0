import test, { type ExecutionContext } from "ava";
import fc from "fast-check";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import { CustodyError } from "../../core/custody-error.ts";
import {
  BadRequestError,
  BLOCK_SIZE,
  CheckpointCorruptError,
  DamagedBlockError,
  FileSizeError,
  HeaderCorruptError,
  SmartWalVolume,
  VolumeClosedError,
  VolumeExistsError,
  VolumeFiles,
  VolumeLayout,
  VolumeNotFoundError,
  WalDamagedError,
} from "../../volume/index.ts";

const blk = (fill: number) => new Uint8Array(BLOCK_SIZE).fill(fill);
const path = (name: string) => `/v/${name}`;

/** A synced volume with 6 written LBAs, part in the checkpoint and part only in the WAL. */
async function written(layout: VolumeLayout = VolumeLayout.Split): Promise<Map<string, Uint8Array>> {
  const fl = new CrashFileLayer();
  await SmartWalVolume.create("/v", { blockCount: 8, walCapacity: 16, spareBlocks: 8, layout }, fl);
  const vol = await SmartWalVolume.open("/v", { fileLayer: fl });
  for (let i = 0; i < 3; i++) await vol.write(i, blk(i + 1));
  await vol.checkpoint();
  for (let i = 3; i < 6; i++) await vol.write(i, blk(i + 1));
  await vol.syncCache();
  await vol.close();
  return fl.snapshotFiles();
}

const open = (files: Map<string, Uint8Array>, scrub = false) => SmartWalVolume.open("/v", { fileLayer: new CrashFileLayer(files), scrub });

test("a missing header is VolumeNotFoundError", async (t) => {
  const files = await written();
  files.delete(path(VolumeFiles.header));
  await t.throwsAsync(open(files), { instanceOf: VolumeNotFoundError });
});

test("a truncated, corrupted or empty header is HeaderCorruptError", async (t) => {
  const base = await written();
  const cases: [string, (h: Uint8Array) => Uint8Array][] = [
    ["truncated", (h) => h.slice(0, 10)],
    ["magic", (h) => Object.assign(h.slice(), { 0: 0x41 })],
    ["crc", (h) => Object.assign(h.slice(), { 17: h[17]! ^ 1 })],
    ["empty", () => new Uint8Array(0)],
  ];
  for (const [name, mutate] of cases) {
    const files = new Map(base);
    files.set(path(VolumeFiles.header), mutate(base.get(path(VolumeFiles.header))!));
    const err = await t.throwsAsync(open(files), { instanceOf: HeaderCorruptError }, name);
    t.is(err?.code, "volume_header_corrupt");
  }
});

test("a truncated extent or WAL is FileSizeError, never a silently shorter volume", async (t) => {
  const base = await written();
  for (const name of [VolumeFiles.extent, VolumeFiles.wal]) {
    const files = new Map(base);
    files.set(path(name), base.get(path(name))!.slice(0, 1000));
    await t.throwsAsync(open(files), { instanceOf: FileSizeError }, name);
  }
});

test("a corrupted record inside the synced log is damage, not a torn tail: the mount is refused naming its LSN, and with acceptLoss the later record survives", async (t) => {
  const files = await written();
  const wal = files.get(path(VolumeFiles.wal))!;
  // Records 4..6 live in slots 3..5 (checkpoint LSN 3); flip a byte of LSN 5's record.
  wal[4 * 64 + 30] = wal[4 * 64 + 30]! ^ 0xff;
  const err = await t.throwsAsync(open(files), { instanceOf: WalDamagedError });
  t.is(err?.code, "volume_wal_damaged");
  // 7 and 8 are empty slots of the same damaged 512-byte sector: the damage may have zeroed them too.
  t.deepEqual(err?.lostLsns, [5, 7, 8]);
  t.deepEqual(err?.report?.lostRecords[0], { lsn: 5, slot: 4, problem: "bad_crc" });
  const vol = await SmartWalVolume.open("/v", { fileLayer: new CrashFileLayer(files), acceptLoss: true });
  t.true(vol.recovery.lossAccepted);
  t.is(vol.recovery.replayedRecords, 2, "the valid record after the damage is kept");
  t.deepEqual(await vol.read(3), blk(4));
  t.deepEqual(await vol.read(5), blk(6));
  await vol.close();
});

test("one corrupted checkpoint slot falls back to the other and is listed; both corrupted is CheckpointCorruptError", async (t) => {
  const base = await written();
  const files = new Map(base);
  // The latest checkpoint (sequence 1) is in slot 1; damage it.
  const ck1 = base.get(path("checkpoint.1"))!.slice();
  ck1[70] = ck1[70]! ^ 0xff;
  files.set(path("checkpoint.1"), ck1);
  const vol = await open(files);
  t.is(vol.recovery.checkpoint.slot, 0);
  t.deepEqual(vol.recovery.checkpointIssues.map((i) => i.slot), [1]);
  for (let i = 0; i < 6; i++) t.deepEqual(await vol.read(i), blk(i + 1)); // replayed from the older checkpoint
  await vol.close();
  files.set(path("checkpoint.0"), base.get(path("checkpoint.0"))!.slice(0, 30));
  const err = await t.throwsAsync(open(files), { instanceOf: CheckpointCorruptError });
  t.is((err?.detail["issues"] as unknown[]).length, 2);
});

async function randomCorruption(t: ExecutionContext, layout: VolumeLayout): Promise<void> {
  const base = await written(layout);
  const data = layout === VolumeLayout.Split ? [VolumeFiles.extent, VolumeFiles.wal] : [VolumeFiles.data];
  const names = [VolumeFiles.header, ...data, ...VolumeFiles.checkpoints];
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...names),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 8 }),
      fc.option(fc.nat(), { nil: undefined }),
      async (name, flips, cut) => {
        const files = new Map(base);
        let bytes = base.get(path(name))!.slice();
        for (const [at, x] of flips) if (bytes.length > 0) bytes[at % bytes.length] = bytes[at % bytes.length]! ^ x;
        if (cut !== undefined) bytes = bytes.slice(0, cut % (bytes.length + 1));
        files.set(path(name), bytes);
        let vol: SmartWalVolume;
        try {
          vol = await open(files, true);
        } catch (err) {
          return err instanceof CustodyError;
        }
        try {
          if (vol.geometry.blockCount !== 8) return false;
          for (let i = 0; i < 8; i++) {
            try {
              const got = await vol.read(i);
              // Whatever reads back must be one of the versions ever written there (or zeros).
              const ok = got.every((b) => b === got[0]) && (got[0] === 0 || got[0] === i + 1);
              if (!ok) return false;
            } catch (err) {
              if (!(err instanceof DamagedBlockError)) return false;
            }
          }
          return true;
        } finally {
          await vol.close();
        }
      },
    ),
    { numRuns: 150, seed: 7 },
  );
  t.pass();
}

test("random corruption or truncation of any volume file gives a typed error or a clean report, never a crash or wrong data", (t) => randomCorruption(t, VolumeLayout.Split));
test("one file: random corruption or truncation of any volume file gives a typed error or a clean report, never a crash or wrong data", (t) =>
  randomCorruption(t, VolumeLayout.OneFile));

test("bad requests are rejected with BadRequestError, counted, and change nothing", async (t) => {
  const fl = new CrashFileLayer();
  await SmartWalVolume.create("/v", { blockCount: 8, walCapacity: 16, spareBlocks: 4, layout: VolumeLayout.Split }, fl);
  const vol = await SmartWalVolume.open("/v", { fileLayer: fl });
  await vol.write(0, blk(1));
  const before = { stats: vol.stats(), window: vol.walWindow(), ops: fl.opCount() };
  const bad: Promise<unknown>[] = [
    vol.write(-1, blk(1)),
    vol.write(8, blk(1)),
    vol.write(1.5, blk(1)),
    vol.write(7, new Uint8Array(2 * BLOCK_SIZE)),
    vol.write(0, new Uint8Array(100)),
    vol.write(0, new Uint8Array(0)),
    vol.write(0, new Uint8Array(5 * BLOCK_SIZE)), // larger than the CoW spare
    vol.trim(0, 0),
    vol.trim(6, 3),
    vol.read(8),
  ];
  for (const p of bad) await t.throwsAsync(p, { instanceOf: BadRequestError });
  t.is(vol.rejected()["volume_bad_request"], bad.length);
  t.deepEqual(vol.stats(), before.stats);
  t.deepEqual(vol.walWindow(), before.window);
  t.is(fl.opCount(), before.ops);
  t.deepEqual(await vol.read(0), blk(1));
  await vol.close();
  await t.throwsAsync(vol.write(0, blk(2)), { instanceOf: VolumeClosedError });
});

test("creating over an existing volume or with an impossible geometry is refused with a typed error", async (t) => {
  const fl = new CrashFileLayer();
  await SmartWalVolume.create("/v", { blockCount: 8 }, fl);
  await t.throwsAsync(SmartWalVolume.create("/v", { blockCount: 8 }, fl), { instanceOf: VolumeExistsError });
  await t.throwsAsync(SmartWalVolume.create("/w", { blockCount: 0 }, fl), { instanceOf: BadRequestError });
  await t.throwsAsync(SmartWalVolume.create("/w", { blockCount: 8, walCapacity: 2 }, fl), { instanceOf: BadRequestError });
  await t.throwsAsync(SmartWalVolume.create("/w", { blockCount: 8, spareBlocks: 0 }, fl), { instanceOf: BadRequestError });
});
