import { createHash } from "node:crypto";
import { BLOCK_SIZE } from "../volume/index.ts";

/**
 * The synthetic workload's data: block `i` is a deterministic function of `i`, so whoever reads the
 * acknowledgement log can say exactly what a recovered volume must contain.
 */
export function workloadBlock(i: number): Uint8Array {
  const out = new Uint8Array(BLOCK_SIZE);
  let seed = createHash("sha256").update(`workload-${i}`).digest();
  for (let o = 0; o < BLOCK_SIZE; o += seed.length) {
    out.set(seed.subarray(0, Math.min(seed.length, BLOCK_SIZE - o)), o);
    seed = createHash("sha256").update(seed).digest();
  }
  return out;
}

/**
 * Write `i` of a workload of `blocks`-block writes on a volume of `blockCount` blocks (pure): it
 * covers the `i`-th of the volume's whole `blocks`-wide slots, round and round, and holds blocks
 * `workloadBlock(i × blocks + b)`. With one block per write, write `i` is block `i` at LBA
 * `i mod blockCount`, as before multi-block writes existed.
 */
export function workloadWrite(i: number, blocks: number, blockCount: number): { lba: number; data: Uint8Array } {
  const slots = Math.floor(blockCount / blocks);
  const data = new Uint8Array(blocks * BLOCK_SIZE);
  for (let b = 0; b < blocks; b++) data.set(workloadBlock(i * blocks + b), b * BLOCK_SIZE);
  return { lba: (i % slots) * blocks, data };
}

/** One line of the acknowledgement log: write `i` at `lba` got `lsn` and lane sequence `seq`. */
export interface AckedWrite {
  readonly i: number;
  readonly lsn: number;
  readonly lba: number;
  readonly seq: number;
}
