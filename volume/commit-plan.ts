import { crc32 } from "node:zlib";
import type { PhysicalRun } from "./allocator.ts";
import { BLOCK_SIZE } from "./format.ts";
import { RecordFlag, type WalRecord } from "./wal-record.ts";

/** One admitted mutation of a group: a write (with its allocated runs in SmartWAL mode) or a trim. */
export type PlannedMutation =
  { kind: "write"; lba: number; data: Uint8Array; runs?: PhysicalRun[] } | { kind: "trim"; lba: number; count: number };

/** What a group commit must do, in order: extent writes, barrier, then these records. */
export interface CommitPlan {
  /** Records with consecutive LSNs after the head, in submission order. */
  records: WalRecord[];
  /** SmartWAL: one pwrite per contiguous physical run. Empty in inline mode. */
  extentWrites: { data: Uint8Array; offset: number }[];
  /** Per mutation, the LSN of its last record (what the write resolves with). */
  lastLsn: number[];
}

/**
 * Turns a group of mutations into records and extent writes (pure). A write of k blocks gets k
 * records with consecutive LSNs — one per block, each with that block's CRC, because blocks of one
 * run are later superseded and reused one at a time. SmartWAL records point at the allocated runs;
 * inline records carry the block as payload and point at the block's home (LBA × 4096). Every
 * record carries `durableLsn`, the volume's durable LSN when the group is appended (its durable
 * watermark). A write without runs in SmartWAL mode is a caller bug (RangeError).
 */
export function planCommit(
  muts: readonly PlannedMutation[],
  headLsn: number,
  epoch: number,
  inline: boolean,
  durableLsn = 0,
  /** SmartWAL `sync-cache` barrier: mark write records as appended before their data's barrier. */
  deferredBarrier = false,
): CommitPlan {
  const records: WalRecord[] = [];
  const extentWrites: CommitPlan["extentWrites"] = [];
  const lastLsn: number[] = [];
  let lsn = headLsn;
  for (const m of muts) {
    if (m.kind === "trim") {
      records.push({
        lsn: ++lsn,
        epoch,
        flag: RecordFlag.Trim,
        lba: m.lba,
        blockCount: m.count,
        physicalOffset: 0,
        dataCrc: 0,
        durableLsn,
      });
    } else if (inline) {
      for (let k = 0; k < m.data.length / BLOCK_SIZE; k++) {
        const payload = m.data.subarray(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE);
        const lba = m.lba + k;
        records.push({
          lsn: ++lsn,
          epoch,
          flag: RecordFlag.Write,
          lba,
          blockCount: 1,
          physicalOffset: lba * BLOCK_SIZE,
          dataCrc: crc32(payload) >>> 0,
          payload,
          durableLsn,
        });
      }
    } else {
      if (!m.runs) throw new RangeError("a SmartWAL write needs allocated runs");
      let off = 0;
      for (const run of m.runs) {
        const runData = m.data.subarray(off * BLOCK_SIZE, (off + run.count) * BLOCK_SIZE);
        extentWrites.push({ data: runData, offset: run.start * BLOCK_SIZE });
        for (let k = 0; k < run.count; k++) {
          const block = runData.subarray(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE);
          records.push({
            lsn: ++lsn,
            epoch,
            flag: RecordFlag.Write,
            lba: m.lba + off + k,
            blockCount: 1,
            physicalOffset: (run.start + k) * BLOCK_SIZE,
            dataCrc: crc32(block) >>> 0,
            durableLsn,
            ...(deferredBarrier ? { deferredBarrier: true } : {}),
          });
        }
        off += run.count;
      }
    }
    lastLsn.push(lsn);
  }
  return { records, extentWrites, lastLsn };
}

/**
 * Merges extent writes that touch adjacent byte ranges into single writes (pure; copies the
 * merged bytes). Copy-on-write allocation places a group's blocks next to each other, so a group
 * of random-LBA writes usually becomes one sequential pwrite. Overlapping writes never occur in a
 * plan (each block is allocated once); the result is sorted by offset.
 */
export function coalesceWrites(
  writes: readonly { data: Uint8Array; offset: number }[],
): { data: Uint8Array; offset: number }[] {
  const sorted = [...writes].sort((a, b) => a.offset - b.offset);
  const out: { data: Uint8Array; offset: number }[] = [];
  let i = 0;
  while (i < sorted.length) {
    let j = i + 1;
    let end = sorted[i]!.offset + sorted[i]!.data.length;
    while (j < sorted.length && sorted[j]!.offset === end) end += sorted[j++]!.data.length;
    if (j === i + 1) out.push(sorted[i]!);
    else {
      const buf = new Uint8Array(end - sorted[i]!.offset);
      for (let k = i; k < j; k++) buf.set(sorted[k]!.data, sorted[k]!.offset - sorted[i]!.offset);
      out.push({ data: buf, offset: sorted[i]!.offset });
    }
    i = j;
  }
  return out;
}
