import test, { type ExecutionContext } from "ava";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import { SmartWalVolume, type ExtentBarrier } from "../../volume/index.ts";
import { blockFor } from "./fixtures/block-pattern.ts";

const DIR = "/vol";
const LBA = 2;

/**
 * Submits `n` writes to one LBA without awaiting (one batch, in submission order), then a
 * SyncCache, on a volume so small that the batch must split into several groups with a checkpoint
 * in between. Returns the layer and the op index at which the SyncCache had been acknowledged.
 */
async function sameLbaBatch(barrier: ExtentBarrier, n: number): Promise<{ fl: CrashFileLayer; syncedAt: number; mountedAt: number }> {
  const fl = new CrashFileLayer();
  await SmartWalVolume.create(DIR, { blockCount: 4, walCapacity: 8, spareBlocks: 2 }, fl);
  const vol = await SmartWalVolume.open(DIR, { fileLayer: fl, extentBarrier: barrier });
  const mountedAt = fl.opCount();
  const lsns = await Promise.all(Array.from({ length: n }, (_, i) => vol.write(LBA, blockFor(i + 1))));
  for (let i = 1; i < n; i++) if (!(lsns[i]! > lsns[i - 1]!)) throw new Error(`write ${i} got LSN ${lsns[i]} after ${lsns[i - 1]}`);
  await vol.syncCache();
  const syncedAt = fl.opCount();
  if (!Buffer.from(await vol.read(LBA)).equals(Buffer.from(blockFor(n)))) throw new Error("live read is not the last submitted write");
  await vol.close();
  return { fl, syncedAt, mountedAt };
}

/** Which write (1..n) the LBA holds, 0 for zeros, -1 for anything else. */
function whichWrite(got: Uint8Array, n: number): number {
  if (got.every((b) => b === 0)) return 0;
  for (let i = 1; i <= n; i++) if (Buffer.from(got).equals(Buffer.from(blockFor(i)))) return i;
  return -1;
}

async function checkEveryCrashPoint(t: ExecutionContext, barrier: ExtentBarrier): Promise<void> {
  const n = 12; // more than the 6 physical blocks and the 8 WAL slots: the batch splits, with syncs and checkpoints between groups
  const { fl, syncedAt, mountedAt } = await sameLbaBatch(barrier, n);
  let states = 0;
  let newestKept = 0;
  for (let at = mountedAt; at <= fl.opCount(); at++) {
    // "all" is what a SIGKILL leaves (every issued write is in the page cache); "none" is a power cut.
    for (const keep of ["all", "none"] as const) {
      const vol = await SmartWalVolume.open(DIR, { fileLayer: fl.crashAt(at, { keep }), extentBarrier: barrier });
      try {
        states++;
        t.deepEqual(vol.recovery.damaged, [], `op ${at} keep ${keep}: damage`);
        const got = whichWrite(await vol.read(LBA), n);
        t.true(got >= 0, `op ${at} keep ${keep}: bytes of no write`);
        if (at >= syncedAt) t.is(got, n, `op ${at} keep ${keep}: after the SyncCache the last submitted write must win`);
        // With everything issued kept (SIGKILL), a later crash point never shows an earlier write.
        if (keep === "all") {
          t.true(got >= newestKept, `op ${at}: write ${got} after write ${newestKept} had been recovered`);
          newestKept = got;
        }
      } finally {
        await vol.close();
      }
    }
  }
  t.log(`${barrier}: ${states} crash states checked, ${fl.opCount() - mountedAt} ops`);
}

test("two or more un-awaited writes to one LBA in one batch: the later-submitted one wins after recovery at every crash point past the SyncCache (per-batch barrier)", (t) =>
  checkEveryCrashPoint(t, "per-batch"));

test("two or more un-awaited writes to one LBA in one batch: the later-submitted one wins after recovery at every crash point past the SyncCache (sync-cache barrier)", (t) =>
  checkEveryCrashPoint(t, "sync-cache"));
