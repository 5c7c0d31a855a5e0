import { crc32 } from "node:zlib";
import type { FileHandleLike } from "../core/index.ts";
import type { VolumeGeometry } from "./format.ts";

/** Bytes of the sync mark (it sits alone in the first 512-byte sector after the ring). */
export const SYNC_MARK_SIZE = 64;
const MAGIC = 0x4d535753; // "SWSM" little-endian

/**
 * Byte offset of the sync mark in the WAL file: the first sector boundary at or after the ring's
 * last slot. It shares the ring's file so the SyncCache's one WAL fdatasync makes it durable too.
 */
export function syncMarkOffset(g: VolumeGeometry): number {
  return Math.ceil((g.walCapacity * g.walSlotSize) / 512) * 512;
}

/**
 * Encodes the sync mark: magic u32, version u32 (1), extent-covered LSN u64 at 8, epoch u64 at 16,
 * CRC-32 of bytes 0..59 at 60. The LSN says every SmartWAL record up to it had its extent data
 * fdatasynced before the mark was written.
 */
export function encodeSyncMark(extentCoveredLsn: number, epoch: number): Uint8Array {
  const buf = new Uint8Array(SYNC_MARK_SIZE);
  const dv = new DataView(buf.buffer);
  dv.setUint32(0, MAGIC, true);
  dv.setUint32(4, 1, true);
  dv.setBigUint64(8, BigInt(extentCoveredLsn), true);
  dv.setBigUint64(16, BigInt(epoch), true);
  dv.setUint32(60, crc32(buf.subarray(0, 60)) >>> 0, true);
  return buf;
}

/** The extent-covered LSN of a mark, or undefined when the bytes are zeros, torn or foreign (never throws). */
export function decodeSyncMark(buf: Uint8Array, epoch: number): number | undefined {
  if (buf.length < SYNC_MARK_SIZE) return undefined;
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (dv.getUint32(0, true) !== MAGIC || dv.getUint32(4, true) !== 1) return undefined;
  if (crc32(buf.subarray(0, 60)) >>> 0 !== dv.getUint32(60, true)) return undefined;
  if (Number(dv.getBigUint64(16, true)) > epoch) return undefined;
  const lsn = dv.getBigUint64(8, true);
  return lsn > BigInt(Number.MAX_SAFE_INTEGER) ? undefined : Number(lsn);
}

/** Reads the mark (undefined when absent: a volume never run with the deferred barrier has none). */
export async function readSyncMark(wal: FileHandleLike, g: VolumeGeometry): Promise<number | undefined> {
  const buf = new Uint8Array(SYNC_MARK_SIZE);
  await wal.read(buf, 0, buf.length, syncMarkOffset(g));
  return decodeSyncMark(buf, g.epoch);
}

/** Writes the mark (not durable until the WAL file's next fdatasync). */
export async function writeSyncMark(wal: FileHandleLike, g: VolumeGeometry, extentCoveredLsn: number): Promise<void> {
  const buf = encodeSyncMark(extentCoveredLsn, g.epoch);
  await wal.write(buf, 0, buf.length, syncMarkOffset(g));
}
