import { crc32 } from "node:zlib";
import type { FileHandleLike } from "../core/index.ts";
import { BLOCK_SIZE } from "./format.ts";
import { ReplayStop, type LogWalk, type RingScan } from "./ring-scan.ts";
import { RecordFlag, type WalRecord } from "./wal-record.ts";

/**
 * True when `r` is a deferred-barrier write that no SyncCache covered (`lsn` > `extentCoveredLsn`):
 * its data may legitimately be missing after a power cut, so it must be checked before replay.
 */
export function needsDataCheck(r: WalRecord, extentCoveredLsn: number): boolean {
  return r.deferredBarrier === true && r.flag === RecordFlag.Write && r.lsn > extentCoveredLsn;
}

/**
 * Ends the log at the first deferred-barrier write past `extentCoveredLsn` whose extent data fails
 * its CRC: that write was never made durable by a SyncCache, so it and every later record were
 * never acknowledged as durable. The later records are cut too, even when their data is intact:
 * replaying them over the hole would show a newer write while an older one is missing (no
 * prefix of the log would give that state). Records at or below `extentCoveredLsn` are never cut
 * (their data was fdatasynced first; a mismatch there is damage, reported by the caller), and
 * no block of a record past it can have been reused, since a block is only freed once a SyncCache
 * covered the record that superseded it. Cut positions become stale slots, erased at mount.
 */
export async function cutAtUnsyncedData(
  walk: LogWalk,
  scan: RingScan,
  extent: FileHandleLike,
  extentCoveredLsn: number,
): Promise<{ walk: LogWalk; cutRecords: number }> {
  const buf = new Uint8Array(BLOCK_SIZE);
  for (let i = 0; i < walk.records.length; i++) {
    const r = walk.records[i]!;
    if (!needsDataCheck(r, extentCoveredLsn)) continue;
    buf.fill(0);
    await extent.read(buf, 0, BLOCK_SIZE, r.physicalOffset);
    if (crc32(buf) >>> 0 === r.dataCrc) continue;
    const endLsn = r.lsn;
    const slotOf = (p: number) => (scan.startSlot + p) % scan.capacity;
    const staleSlots: number[] = [];
    for (let p = endLsn - scan.firstLsn; p < scan.capacity; p++) {
      const at = scan.positions[p]!;
      if (at.kind === "record" || at.kind === "garbage") staleSlots.push(slotOf(p));
    }
    const cut: LogWalk = {
      records: walk.records.slice(0, i),
      lost: walk.lost.filter((l) => l.lsn < endLsn),
      endLsn,
      stop: { reason: ReplayStop.UnsyncedData, slot: slotOf(endLsn - scan.firstLsn), foundLsn: endLsn },
      staleSlots,
    };
    return { walk: cut, cutRecords: walk.records.length - i };
  }
  return { walk, cutRecords: 0 };
}
