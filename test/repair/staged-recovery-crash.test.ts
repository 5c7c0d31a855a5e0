/**
 * A recovery's destination never looks like a volume before it is one (issue #47), at every crash
 * point: the recovery is built on a CrashFileLayer, and for each operation it logged the disk a power
 * cut right after it could leave (unsynced writes dropped, or all kept) either has no `volume.hdr`
 * (nothing mounts) or holds the complete, checked volume. Run again on that disk, the same recovery
 * starts over and completes (or finds the sealed volume and leaves it alone).
 */
import test from "ava";
import { recoverVolume } from "../../actors/repair/volume-recovery.ts";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import { makeTransportUnit } from "../../lanes/transport-unit.ts";
import { sealPayload } from "../../transport/protocol/wire/unit-payload.ts";
import { SmartWalVolume, VolumeExistsError, VolumeNotFoundError } from "../../volume/index.ts";
import { blockData } from "../e2e/e2e-fixture.ts";

const KEY = new Uint8Array(32).fill(7);
const BLOCKS = 16;
const DIR = "/dest/vol";
/** 24 writes over LBAs 0..7, the newest of each LBA the last 8. */
const RECORDS = Array.from({ length: 24 }, (_, i) => ({ seq: i + 1, lsn: i + 1, lba: i % 8, data: blockData(i + 1) }));
const UNITS = RECORDS.map((r) => {
  const uid = { volume: "v", lane: "l0", term: 1, firstSeq: r.seq, lastSeq: r.seq };
  return makeTransportUnit({ ...uid, commitTs: [1], payload: sealPayload(KEY, uid, [r]) });
});
const recover = (fileLayer: CrashFileLayer) => recoverVolume({ volume: "v", dir: DIR, blockCount: BLOCKS, lanes: ["l0"], dataKey: KEY, units: UNITS, fileLayer });

/** The recovered volume's content, block by block: LBA i < 8 holds write 17 + i, the rest zeros. */
async function readsBackWhole(fl: CrashFileLayer): Promise<boolean> {
  const vol = await SmartWalVolume.open(DIR, { fileLayer: fl });
  try {
    const got = await vol.read(0, BLOCKS);
    for (let lba = 0; lba < BLOCKS; lba++) {
      const want = lba < 8 ? blockData(17 + lba) : new Uint8Array(4096);
      if (!Buffer.from(got.subarray(lba * 4096, (lba + 1) * 4096)).equals(want)) return false;
    }
    return true;
  } finally {
    await vol.close();
  }
}

test("after a power cut at any point of a recovery, its destination either has no header (nothing mounts) or is the whole volume; the same recovery run again completes", async (t) => {
  const fl = new CrashFileLayer();
  await recover(fl);
  t.true(await readsBackWhole(fl), "the uninterrupted recovery");
  const points = fl.opCount();
  let headerless = 0;
  let sealed = 0;
  for (let at = 0; at <= points; at++) {
    for (const keep of ["none", "all"] as const) {
      const disk = fl.crashAt(at, { keep });
      const where = `crash after op ${at}/${points} (${fl.opKinds()[at - 1] ?? "start"}), unsynced writes: ${keep}`;
      if (await disk.exists(`${DIR}/volume.hdr`)) {
        sealed++;
        t.true(await readsBackWhole(disk), `${where}: a header means the whole volume`);
        await t.throwsAsync(recover(disk), { instanceOf: VolumeExistsError }, `${where}: a sealed volume is left alone`);
      } else {
        headerless++;
        await t.throwsAsync(SmartWalVolume.open(DIR, { fileLayer: disk }), { instanceOf: VolumeNotFoundError }, `${where}: nothing mounts`);
        await recover(disk);
        t.true(await readsBackWhole(disk), `${where}: run again, it completes`);
        t.deepEqual((await disk.readdir(DIR)).filter((f) => f.endsWith(".partial")), [], `${where}: no partial file left`);
      }
    }
  }
  t.true(headerless > 0 && sealed > 0, `${headerless} crash disks without a header, ${sealed} sealed`);
  t.log(`${points} operations, ${headerless} crash disks without a header (each recovered again), ${sealed} with the sealed volume`);
});
