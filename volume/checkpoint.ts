import { crc32 } from "node:zlib";
import type { FileHandleLike } from "../core/index.ts";
import { BlockMap, UNMAPPED } from "./block-map.ts";

const MAGIC_V1 = new TextEncoder().encode("SWCKPT01");
const MAGIC = new TextEncoder().encode("SWCKPT02");
const HEAD = 64;
const ENTRY_V1 = 8;
/** Version 2 entries add the LSN of each LBA's latest change, so a peer's dirty set survives a restart. */
const ENTRY = 16;
const UNMAPPED_CODE = 0xffff_ffff;
const DAMAGED_BIT = 0x8000_0000;

/**
 * A checkpoint: a snapshot of the LBA → physical map as of `lsn` (every record ≤ lsn is folded in)
 * plus where replay starts in the ring. Two slots alternate so a torn checkpoint write always
 * leaves the previous one intact; mount picks the valid slot with the highest sequence.
 */
export interface Checkpoint {
  sequence: number;
  lsn: number;
  /** Ring slot of the record with LSN lsn + 1. */
  ringStartSlot: number;
  epoch: number;
  map: BlockMap;
}

/** Why a checkpoint slot was not usable. */
export interface CheckpointIssue {
  slot: number;
  problem: string;
}

/**
 * Encodes a checkpoint: 64-byte head (magic `SWCKPT02`, sequence, lsn, ring start, epoch, block
 * count, body length, body CRC, head CRC at 60) then one 16-byte entry per LBA (u32 physical block
 * with bit 31 = damaged, 0xFFFFFFFF = unmapped; u32 data CRC; u64 LSN of the LBA's latest change).
 */
export function encodeCheckpoint(c: Checkpoint): Uint8Array {
  const n = c.map.blockCount;
  const buf = new Uint8Array(HEAD + n * ENTRY);
  const dv = new DataView(buf.buffer);
  for (let i = 0; i < n; i++) {
    const p = c.map.phys[i]!;
    const code = p === UNMAPPED ? UNMAPPED_CODE : (p | (c.map.damaged[i] ? DAMAGED_BIT : 0)) >>> 0;
    dv.setUint32(HEAD + i * ENTRY, code, true);
    dv.setUint32(HEAD + i * ENTRY + 4, c.map.crc[i]!, true);
    dv.setBigUint64(HEAD + i * ENTRY + 8, BigInt(c.map.lsn[i]!), true);
  }
  buf.set(MAGIC, 0);
  dv.setBigUint64(8, BigInt(c.sequence), true);
  dv.setBigUint64(16, BigInt(c.lsn), true);
  dv.setBigUint64(24, BigInt(c.ringStartSlot), true);
  dv.setBigUint64(32, BigInt(c.epoch), true);
  dv.setBigUint64(40, BigInt(n), true);
  dv.setUint32(48, n * ENTRY, true);
  dv.setUint32(52, crc32(buf.subarray(HEAD)) >>> 0, true);
  dv.setUint32(60, crc32(buf.subarray(0, 60)) >>> 0, true);
  return buf;
}

/**
 * Decodes a checkpoint for a volume of `blockCount` LBAs and `physicalBlocks` extent blocks.
 * Returns a string naming the problem (truncated, magic, CRC, geometry, a block named twice)
 * instead of throwing, so mount can fall back to the other slot. A version-1 checkpoint has no
 * per-LBA LSNs: every LBA is taken as changed at the checkpoint LSN (a conservative dirty set).
 */
export function decodeCheckpoint(
  buf: Uint8Array,
  blockCount: number,
  physicalBlocks: number,
  walCapacity: number,
): Checkpoint | string {
  if (buf.length < HEAD) return `truncated (${buf.length} bytes)`;
  const v1 = MAGIC_V1.every((b, i) => buf[i] === b);
  if (!v1 && !MAGIC.every((b, i) => buf[i] === b)) return "bad magic";
  const entry = v1 ? ENTRY_V1 : ENTRY;
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (crc32(buf.subarray(0, 60)) >>> 0 !== dv.getUint32(60, true)) return "head CRC mismatch";
  const n = Number(dv.getBigUint64(40, true));
  if (n !== blockCount) return `block count ${n} does not match header ${blockCount}`;
  const bodyLength = dv.getUint32(48, true);
  if (bodyLength !== n * entry) return "body length mismatch";
  if (buf.length < HEAD + bodyLength) return `truncated body (${buf.length} of ${HEAD + bodyLength} bytes)`;
  if (crc32(buf.subarray(HEAD, HEAD + bodyLength)) >>> 0 !== dv.getUint32(52, true)) return "body CRC mismatch";
  const lsn = Number(dv.getBigUint64(16, true));
  const ringStartSlot = Number(dv.getBigUint64(24, true));
  if (ringStartSlot !== lsn % walCapacity) return `ring start ${ringStartSlot} does not match LSN ${lsn}`;
  const map = new BlockMap(n);
  const seen = new Uint8Array(physicalBlocks);
  for (let i = 0; i < n; i++) {
    const at = HEAD + i * entry;
    const changed = v1 ? lsn : Number(dv.getBigUint64(at + 8, true));
    if (changed > lsn) return `LBA ${i} changed at LSN ${changed}, after the checkpoint's ${lsn}`;
    map.lsn[i] = changed;
    const code = dv.getUint32(at, true);
    if (code === UNMAPPED_CODE) continue;
    const p = code & ~DAMAGED_BIT;
    if (p >= physicalBlocks) return `LBA ${i} names block ${p} outside the extent`;
    if (seen[p]) return `block ${p} named by two LBAs`;
    seen[p] = 1;
    map.set(i, p, dv.getUint32(at + 4, true), changed);
    if (code & DAMAGED_BIT) map.damaged[i] = 1;
  }
  return {
    sequence: Number(dv.getBigUint64(8, true)),
    lsn,
    ringStartSlot,
    epoch: Number(dv.getBigUint64(32, true)),
    map,
  };
}

/** Reads a whole file through the seam. */
export async function readAll(file: FileHandleLike): Promise<Uint8Array> {
  const size = await file.size();
  const buf = new Uint8Array(size);
  let done = 0;
  while (done < size) {
    const n = await file.read(buf, done, size - done, done);
    if (n <= 0) break;
    done += n;
  }
  return done === size ? buf : buf.subarray(0, done);
}

/**
 * Loads both slots and returns the valid one with the highest sequence (and its slot index), with
 * the problems of any slot that was not usable. `chosen` is undefined when neither slot is valid.
 */
export async function loadCheckpoint(
  files: readonly FileHandleLike[],
  blockCount: number,
  physicalBlocks: number,
  walCapacity: number,
): Promise<{ chosen?: Checkpoint; slot: number; issues: CheckpointIssue[] }> {
  const issues: CheckpointIssue[] = [];
  let chosen: Checkpoint | undefined;
  let slot = -1;
  for (let s = 0; s < files.length; s++) {
    const decoded = decodeCheckpoint(await readAll(files[s]!), blockCount, physicalBlocks, walCapacity);
    if (typeof decoded === "string") {
      issues.push({ slot: s, problem: decoded });
      continue;
    }
    if (!chosen || decoded.sequence > chosen.sequence) {
      chosen = decoded;
      slot = s;
    }
  }
  return chosen ? { chosen, slot, issues } : { slot, issues };
}

/** Writes `c` into the slot file and fdatasyncs it; durable when this resolves. */
export async function writeCheckpoint(file: FileHandleLike, c: Checkpoint): Promise<void> {
  const buf = encodeCheckpoint(c);
  await file.write(buf, 0, buf.length, 0);
  await file.datasync();
}
