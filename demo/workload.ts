/**
 * The demo's write workload as pure functions: block contents from a seed (so the writer process
 * and the checker agree without shipping data), the LBA of the i-th write, and the volume content
 * a list of acknowledged writes implies at a given LSN — the reference the recovered volume is
 * compared with byte for byte.
 */
import { BLOCK_SIZE } from "../volume/format.ts";

/** `blocks` × 4 KiB derived from `seed`. */
export function blockData(seed: number, blocks = 1): Uint8Array {
  const b = new Uint8Array(blocks * BLOCK_SIZE);
  for (let i = 0; i < b.length; i++) b[i] = (seed * 131 + i * 7 + (i >> 12) * 29) & 0xff;
  return b;
}

/** LBA of write `i` on a volume of `blockCount` blocks, `blocks` per write; some LBAs repeat, so order matters. */
export function lbaOf(i: number, blockCount: number, blocks: number): number {
  const slots = Math.floor(blockCount / blocks);
  return ((i * 37) % slots) * blocks;
}

/** One acknowledged write. */
export interface AckedWrite {
  readonly lsn: number;
  readonly seq: number;
  readonly lba: number;
  readonly seed: number;
  readonly blocks: number;
}

/** The volume content after every write with LSN ≤ `lsn`. */
export function contentAt(writes: readonly AckedWrite[], blockCount: number, lsn: number): Uint8Array {
  const out = new Uint8Array(blockCount * BLOCK_SIZE);
  for (const w of [...writes].sort((a, b) => a.lsn - b.lsn)) if (w.lsn <= lsn) out.set(blockData(w.seed, w.blocks), w.lba * BLOCK_SIZE);
  return out;
}
