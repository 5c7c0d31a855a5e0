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

/** One line of the acknowledgement log: write `i` at `lba` got `lsn` and lane sequence `seq`. */
export interface AckedWrite {
  readonly i: number;
  readonly lsn: number;
  readonly lba: number;
  readonly seq: number;
}
