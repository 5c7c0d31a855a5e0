import { crc32 } from "node:zlib";
import { BLOCK_SIZE } from "../core/index.ts";
import { HeaderCorruptError } from "./volume-errors.ts";

/** The block size every volume uses (defined in core/, which the wire format shares). */
export { BLOCK_SIZE };
/** Size of the header file and of a metadata-only WAL record slot. */
export const HEADER_SIZE = 4096;
/** Bytes of a WAL record's fixed part (the whole slot in SmartWAL mode). */
export const RECORD_SIZE = 64;
/** Format version written by this code; any other version is refused. */
export const FORMAT_VERSION = 1;
/** "SMARTWAL" in ASCII: the first 8 bytes of the header file. */
export const HEADER_MAGIC = new TextEncoder().encode("SMARTWAL");

/**
 * Write encodings. SmartWAL: data to the extent first, 64-byte WAL records. Inline: full payload in the WAL, flushed
 * later.
 */
export const VolumeMode = { SmartWal: "smartwal", Inline: "inline" } as const;
/** One of the VolumeMode values. */
export type VolumeMode = (typeof VolumeMode)[keyof typeof VolumeMode];
const MODE_CODE: Record<VolumeMode, number> = { smartwal: 1, inline: 2 };

/** File names inside a volume directory. */
export const VolumeFiles = {
  header: "volume.hdr",
  extent: "extent.dat",
  wal: "wal.ring",
  /** One-file layout: the extent at offset 0, the WAL region (ring + sync mark sector) after it. */
  data: "volume.dat",
  checkpoints: ["checkpoint.0", "checkpoint.1"],
} as const;

/**
 * Where extent and WAL live. `split`: two files (`extent.dat`, `wal.ring`), so a deferred extent
 * barrier costs two fdatasyncs per SyncCache. `one-file`: both regions in `volume.dat`, as on one
 * block device, so one fdatasync covers data and records together.
 */
export const VolumeLayout = { Split: "split", OneFile: "one-file" } as const;
/** One of the VolumeLayout values. */
export type VolumeLayout = (typeof VolumeLayout)[keyof typeof VolumeLayout];
/** Header byte 49; 0 is what every volume written before the layout existed holds. */
const LAYOUT_CODE: Record<VolumeLayout, number> = { split: 0, "one-file": 1 };

/** The immutable geometry of a volume, as stored in its header. */
export interface VolumeGeometry {
  mode: VolumeMode;
  blockSize: number;
  /** Logical blocks (LBAs 0..blockCount-1). */
  blockCount: number;
  /** Physical blocks in the extent: blockCount plus the copy-on-write spare (SmartWAL), or blockCount (inline). */
  physicalBlocks: number;
  /** Number of record slots in the WAL ring. */
  walCapacity: number;
  /** Bytes per WAL slot: 64 (SmartWAL) or 64 + 4096 (inline). */
  walSlotSize: number;
  epoch: number;
  layout: VolumeLayout;
}

/** Slot size for a mode: metadata-only records, or record + one block of payload. */
export function slotSizeFor(mode: VolumeMode): number {
  return mode === VolumeMode.Inline ? RECORD_SIZE + BLOCK_SIZE : RECORD_SIZE;
}

/**
 * Default copy-on-write spare for `blockCount` LBAs: one eighth of the volume, at least 64 blocks.
 * Spare blocks hold new versions until the records that supersede old versions are durable and
 * the next checkpoint no longer names them.
 */
export function defaultSpareBlocks(blockCount: number): number {
  return Math.max(64, Math.ceil(blockCount / 8));
}

/** The fewest WAL slots a new volume gets by default. */
export const MIN_DEFAULT_WAL_CAPACITY = 1024;

/**
 * Default WAL ring slots. SmartWAL: one record per block, and a write's records must fit the ring
 * at once, so the ring holds at least the spare (the largest write copy-on-write allows): a volume
 * over 8,192 blocks gets one slot per spare block (64 bytes each), smaller ones 1,024. Inline: 1,024.
 */
export function defaultWalCapacity(mode: VolumeMode, spareBlocks: number): number {
  return mode === VolumeMode.SmartWal ? Math.max(MIN_DEFAULT_WAL_CAPACITY, spareBlocks) : MIN_DEFAULT_WAL_CAPACITY;
}

/**
 * The most blocks one write may span. SmartWAL: the copy-on-write spare, and no more than the ring
 * holds (a write's records are appended together). Inline: half the ring (payloads live there until flushed).
 */
export function maxWriteBlocks(
  g: Pick<VolumeGeometry, "mode" | "blockCount" | "physicalBlocks" | "walCapacity">,
): number {
  return g.mode === VolumeMode.SmartWal
    ? Math.min(g.physicalBlocks - g.blockCount, g.walCapacity)
    : Math.floor(g.walCapacity / 2);
}

/** Encodes the header (4096 bytes; fields little-endian, CRC32 over bytes 0..59 at offset 60). */
export function encodeHeader(g: VolumeGeometry): Uint8Array {
  const buf = new Uint8Array(HEADER_SIZE);
  const dv = new DataView(buf.buffer);
  buf.set(HEADER_MAGIC, 0);
  dv.setUint32(8, FORMAT_VERSION, true);
  dv.setUint32(12, g.blockSize, true);
  dv.setBigUint64(16, BigInt(g.blockCount), true);
  dv.setBigUint64(24, BigInt(g.physicalBlocks), true);
  dv.setUint32(32, g.walCapacity, true);
  dv.setUint32(36, g.walSlotSize, true);
  dv.setBigUint64(40, BigInt(g.epoch), true);
  dv.setUint8(48, MODE_CODE[g.mode]);
  dv.setUint8(49, LAYOUT_CODE[g.layout]);
  dv.setUint32(60, crc32(buf.subarray(0, 60)) >>> 0, true);
  return buf;
}

/**
 * Decodes and validates a header. Throws HeaderCorruptError naming the failed check when the
 * bytes are short, the magic/version/CRC is wrong, or the geometry is impossible.
 */
export function decodeHeader(buf: Uint8Array): VolumeGeometry {
  if (buf.length < 64)
    throw new HeaderCorruptError(`header is truncated (${buf.length} bytes)`, { length: buf.length });
  for (let i = 0; i < HEADER_MAGIC.length; i++) {
    if (buf[i] !== HEADER_MAGIC[i]) throw new HeaderCorruptError("header magic is wrong", { check: "magic" });
  }
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const stored = dv.getUint32(60, true);
  if (crc32(buf.subarray(0, 60)) >>> 0 !== stored)
    throw new HeaderCorruptError("header CRC mismatch", { check: "crc" });
  const version = dv.getUint32(8, true);
  if (version !== FORMAT_VERSION) throw new HeaderCorruptError(`unsupported format version ${version}`, { version });
  const modeCode = dv.getUint8(48);
  const mode = modeCode === 1 ? VolumeMode.SmartWal : modeCode === 2 ? VolumeMode.Inline : undefined;
  if (!mode) throw new HeaderCorruptError(`unknown mode code ${modeCode}`, { modeCode });
  const layoutCode = dv.getUint8(49);
  const layout = layoutCode === 0 ? VolumeLayout.Split : layoutCode === 1 ? VolumeLayout.OneFile : undefined;
  if (!layout) throw new HeaderCorruptError(`unknown layout code ${layoutCode}`, { layoutCode });
  const g: VolumeGeometry = {
    mode,
    blockSize: dv.getUint32(12, true),
    blockCount: Number(dv.getBigUint64(16, true)),
    physicalBlocks: Number(dv.getBigUint64(24, true)),
    walCapacity: dv.getUint32(32, true),
    walSlotSize: dv.getUint32(36, true),
    epoch: Number(dv.getBigUint64(40, true)),
    layout,
  };
  const problem = geometryProblem(g);
  if (problem) throw new HeaderCorruptError(`header geometry invalid: ${problem}`, { ...g });
  return g;
}

/** Why a geometry is impossible, or undefined when it is valid. Shared by create and decode. */
export function geometryProblem(g: VolumeGeometry): string | undefined {
  if (g.blockSize !== BLOCK_SIZE) return `block size ${g.blockSize} (must be ${BLOCK_SIZE})`;
  if (!Number.isSafeInteger(g.blockCount) || g.blockCount < 1 || g.blockCount > MAX_BLOCKS)
    return `block count ${g.blockCount}`;
  const minPhysical = g.mode === VolumeMode.SmartWal ? g.blockCount + 1 : g.blockCount;
  if (!Number.isSafeInteger(g.physicalBlocks) || g.physicalBlocks < minPhysical || g.physicalBlocks > MAX_BLOCKS) {
    return `physical blocks ${g.physicalBlocks} (need at least ${minPhysical})`;
  }
  if (!Number.isInteger(g.walCapacity) || g.walCapacity < 4 || g.walCapacity > 1 << 26)
    return `WAL capacity ${g.walCapacity}`;
  if (g.walSlotSize !== slotSizeFor(g.mode)) return `WAL slot size ${g.walSlotSize}`;
  if (!Number.isSafeInteger(g.epoch) || g.epoch < 0) return `epoch ${g.epoch}`;
  if (g.layout !== VolumeLayout.Split && g.layout !== VolumeLayout.OneFile) return `layout ${String(g.layout)}`;
  return undefined;
}

/** Largest block count: physical block numbers are 31-bit in the checkpoint (top bit = damaged). */
export const MAX_BLOCKS = 0x7fff_fff0;

/** Bytes of the extent: physical blocks × block size (the extent starts at offset 0 of its file). */
export function extentBytes(g: VolumeGeometry): number {
  return g.physicalBlocks * BLOCK_SIZE;
}

/**
 * Bytes the WAL needs: the ring, plus (one-file layout) the sync mark sector after it, rounded up to
 * 4 KiB so the region is pre-allocated whole. A split `wal.ring` is sized to the ring alone, as it
 * always was; its mark sector is appended by the first mark write.
 */
export function walRegionBytes(g: VolumeGeometry): number {
  const ring = g.walCapacity * g.walSlotSize;
  if (g.layout === VolumeLayout.Split) return ring;
  return Math.ceil((Math.ceil(ring / 512) * 512 + 512) / 4096) * 4096;
}
