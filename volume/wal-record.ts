import { crc32 } from "node:zlib";
import { RECORD_SIZE } from "./format.ts";

/** Record kinds. A trim record unmaps its LBAs (they read back as zeros). */
export const RecordFlag = { Write: 1, Trim: 2 } as const;
/** One of the RecordFlag values. */
export type RecordFlag = (typeof RecordFlag)[keyof typeof RecordFlag];

const RECORD_MAGIC = 0x31525753; // "SWR1" little-endian
/** Record version written by this code; version 1 (no durable watermark) is still read. */
const RECORD_VERSION = 2;

/** One WAL record: the metadata of one write (one contiguous physical run) or one trim. */
export interface WalRecord {
  lsn: number;
  epoch: number;
  flag: RecordFlag;
  lba: number;
  blockCount: number;
  /** Byte offset of the data in the extent (SmartWAL write), 0 otherwise. */
  physicalOffset: number;
  /** CRC32 of the run's data bytes (write), 0 for trim. */
  dataCrc: number;
  /** Inline mode only: the data itself (blockCount × 4096 bytes). */
  payload?: Uint8Array;
  /**
   * LSN the volume had made durable when this record was appended (its durable watermark). A
   * record found on disk proves every LSN up to this one was durable: recovery uses it to tell
   * damage from a torn tail. Optional on input (0); always set by decodeRecord (0 in version 1).
   */
  durableLsn?: number;
  /**
   * SmartWAL write appended before its extent data was fdatasynced (the `sync-cache` barrier):
   * recovery may find its data missing when no SyncCache covered it. Byte 6 bit 0.
   */
  deferredBarrier?: boolean;
}

/** Why a slot does not hold a valid record. */
export const RecordProblem = {
  Empty: "empty",
  BadMagic: "bad_magic",
  BadCrc: "bad_crc",
  BadField: "bad_field",
} as const;
/** One of the RecordProblem values. */
export type RecordProblem = (typeof RecordProblem)[keyof typeof RecordProblem];

/**
 * Encodes `r` into `slot` (RECORD_SIZE bytes, plus the payload right after it in inline mode).
 * Layout (little-endian): magic u32, version u8 (2), flag u8, options u8 (bit 0 = deferred barrier), pad u8, lsn u64,
 * epoch u64, lba u64, blockCount u32, payloadLength u32, physicalOffset u64, dataCrc u32, durable watermark u64 at 52,
 * recordCrc u32 at 60 covering bytes 0..59 and the payload.
 */
export function encodeRecord(r: WalRecord, slot: Uint8Array): void {
  const payloadLength = r.payload?.length ?? 0;
  if (slot.length < RECORD_SIZE + payloadLength) throw new RangeError("slot too small for record");
  slot.fill(0, 0, RECORD_SIZE);
  const dv = new DataView(slot.buffer, slot.byteOffset, slot.byteLength);
  dv.setUint32(0, RECORD_MAGIC, true);
  dv.setUint8(4, RECORD_VERSION);
  dv.setUint8(5, r.flag);
  if (r.deferredBarrier) dv.setUint8(6, 1);
  dv.setBigUint64(8, BigInt(r.lsn), true);
  dv.setBigUint64(16, BigInt(r.epoch), true);
  dv.setBigUint64(24, BigInt(r.lba), true);
  dv.setUint32(32, r.blockCount, true);
  dv.setUint32(36, payloadLength, true);
  dv.setBigUint64(40, BigInt(r.physicalOffset), true);
  dv.setUint32(48, r.dataCrc >>> 0, true);
  dv.setBigUint64(52, BigInt(r.durableLsn ?? 0), true);
  if (r.payload) slot.set(r.payload, RECORD_SIZE);
  dv.setUint32(60, recordCrc(slot, payloadLength), true);
}

function recordCrc(slot: Uint8Array, payloadLength: number): number {
  const head = crc32(slot.subarray(0, 60));
  return (payloadLength > 0 ? crc32(slot.subarray(RECORD_SIZE, RECORD_SIZE + payloadLength), head) : head) >>> 0;
}

/**
 * Decodes the record in `slot`, or names the problem. Checks magic, version, flag, the record CRC
 * and that a payload (if any) fits the slot; geometry checks (LBA range, extent range) are the
 * caller's. Never throws on any input bytes.
 */
export function decodeRecord(slot: Uint8Array): WalRecord | RecordProblem {
  if (slot.length < RECORD_SIZE) return RecordProblem.Empty;
  let zero = true;
  for (let i = 0; i < RECORD_SIZE; i++)
    if (slot[i] !== 0) {
      zero = false;
      break;
    }
  if (zero) return RecordProblem.Empty;
  const dv = new DataView(slot.buffer, slot.byteOffset, slot.byteLength);
  const version = dv.getUint8(4);
  if (dv.getUint32(0, true) !== RECORD_MAGIC || (version !== 1 && version !== RECORD_VERSION))
    return RecordProblem.BadMagic;
  const payloadLength = dv.getUint32(36, true);
  if (RECORD_SIZE + payloadLength > slot.length) return RecordProblem.BadField;
  if (recordCrc(slot, payloadLength) !== dv.getUint32(60, true)) return RecordProblem.BadCrc;
  const flag = dv.getUint8(5);
  if (flag !== RecordFlag.Write && flag !== RecordFlag.Trim) return RecordProblem.BadField;
  const big = (o: number) => {
    const v = dv.getBigUint64(o, true);
    return v > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(v);
  };
  const rec: WalRecord = {
    lsn: big(8),
    epoch: big(16),
    flag,
    lba: big(24),
    blockCount: dv.getUint32(32, true),
    physicalOffset: big(40),
    dataCrc: dv.getUint32(48, true),
    durableLsn: version === 1 ? 0 : big(52),
  };
  if ((dv.getUint8(6) & 1) === 1) rec.deferredBarrier = true;
  if (rec.lsn < 1 || rec.epoch < 0 || rec.lba < 0 || rec.physicalOffset < 0 || rec.blockCount < 1)
    return RecordProblem.BadField;
  // A record cannot have been appended after its own LSN became durable.
  if (rec.durableLsn! < 0 || rec.durableLsn! >= rec.lsn) return RecordProblem.BadField;
  if (payloadLength > 0) rec.payload = slot.slice(RECORD_SIZE, RECORD_SIZE + payloadLength);
  return rec;
}
