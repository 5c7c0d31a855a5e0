import test from "ava";
import fc from "fast-check";
import { VolumeLayout, VolumeMode } from "../../volume/index.ts";
import { assertClean, explore, inFlightCrashProperty, newTally, runWorkload } from "./crash-harness.ts";

// The schedules of crash-harness.test.ts (same seeds, steps, crash points, drops, subsets and
// tears) on the one-file layout: extent and WAL regions in volume.dat, one fdatasync per SyncCache.

test("crash harness (SmartWAL, one file, extent barrier at SyncCache): every crash point with unsynced drops and torn sectors loses no SyncCache-acknowledged write, returns no wrong byte, reports no damage and leaves no LSN gap", async (t) => {
  const tally = newTally();
  for (const seed of [31, 32, 33, 34, 35, 36, 37, 38]) {
    const w = await runWorkload(seed, VolumeMode.SmartWal, 26, undefined, undefined, "sync-cache", VolumeLayout.OneFile);
    await explore(w, seed, tally, { subsets: 3, tears: 3, allowDamage: false });
  }
  assertClean(t, tally, 1000);
  // One fdatasync orders nothing inside it: images with a record but not its data must occur.
  t.true(tally.statesWithUnsyncedCut > 0, "no crash state had a durable record without its data");
});

test("crash harness (SmartWAL, one file, per-batch barrier): every crash point loses no acknowledged write, returns no wrong byte, reports no damage", async (t) => {
  const tally = newTally();
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const w = await runWorkload(seed, VolumeMode.SmartWal, 26, undefined, undefined, "per-batch", VolumeLayout.OneFile);
    await explore(w, seed, tally, { subsets: 3, tears: 3, allowDamage: false });
  }
  assertClean(t, tally, 1000);
});

test("crash harness (inline mode, one file): every crash point recovers every acknowledged write byte-exact", async (t) => {
  const tally = newTally();
  for (const seed of [11, 12]) {
    const w = await runWorkload(seed, VolumeMode.Inline, 18, undefined, undefined, "per-batch", VolumeLayout.OneFile);
    await explore(w, seed, tally, { subsets: 2, tears: 2, allowDamage: false });
  }
  assertClean(t, tally, 0);
  t.true(tally.distinct.size >= 200);
});

test("property (one file, extent barrier at SyncCache): any workload, any crash point with writes in flight, any subset of them kept and any tear loses no SyncCache-acknowledged write and returns no wrong byte", async (t) => {
  await fc.assert(inFlightCrashProperty(VolumeLayout.OneFile), { numRuns: 60 });
  t.pass();
});
