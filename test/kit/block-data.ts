import { BLOCK_SIZE } from "../../core/index.ts";

/** A block of `blocks` × 4 KiB filled from `seed` (the same seed always gives the same bytes). */
export function blockData(seed: number, blocks = 1): Uint8Array {
  const b = new Uint8Array(blocks * BLOCK_SIZE);
  for (let i = 0; i < b.length; i++) b[i] = (seed * 131 + i * 7) & 0xff;
  return b;
}
