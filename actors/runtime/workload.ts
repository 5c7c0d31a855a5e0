import { existsSync, readFileSync } from "node:fs";
import { createCipheriv, createHash } from "node:crypto";
import { BLOCK_SIZE } from "../../volume/index.ts";

const KEY = createHash("sha256").update("workload").digest();

/**
 * Blocks `first` … `first + count - 1` of the synthetic workload's data, in one buffer: the AES-256-CTR
 * keystream under a fixed key, block `n` being its 4 KiB at counter n × 256 (one cipher call for a
 * whole write, where a hash chain per block cost a writer milliseconds of CPU per 64 KiB write).
 */
export function workloadBlocks(first: number, count: number): Uint8Array {
  const iv = Buffer.alloc(16);
  iv.writeBigUInt64BE(BigInt(first) * BigInt(BLOCK_SIZE / 16), 8);
  return new Uint8Array(createCipheriv("aes-256-ctr", KEY, iv).update(new Uint8Array(count * BLOCK_SIZE)));
}

/**
 * The synthetic workload's data: block `i` is a deterministic function of `i`, so whoever reads the
 * acknowledgement log can say exactly what a recovered volume must contain (see workloadBlocks).
 */
export function workloadBlock(i: number): Uint8Array {
  return workloadBlocks(i, 1);
}

/**
 * Write `i` of a workload of `blocks`-block writes on a volume of `blockCount` blocks (pure): it
 * covers the `i`-th of the volume's whole `blocks`-wide slots, round and round, and holds blocks
 * `workloadBlock(i × blocks + b)`. With one block per write, write `i` is block `i` at LBA
 * `i mod blockCount`, as before multi-block writes existed.
 */
export function workloadWrite(i: number, blocks: number, blockCount: number): { lba: number; data: Uint8Array } {
  const slots = Math.floor(blockCount / blocks);
  return { lba: (i % slots) * blocks, data: workloadBlocks(i * blocks, blocks) };
}

/** One line of the acknowledgement log: write `i` at `lba` got `lsn` and lane sequence `seq`. */
export interface AckedWrite {
  readonly i: number;
  readonly lsn: number;
  readonly lba: number;
  readonly seq: number;
}

/**
 * The acknowledgement log's complete lines, in the order they were appended. A line torn by a
 * SIGKILL (the writer died mid-append) is no acknowledgement the application saw, and is skipped;
 * a missing file is an empty log.
 */
export function readAckLog(path: string): AckedWrite[] {
  if (!existsSync(path)) return [];
  const out: AckedWrite[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    try {
      const a = JSON.parse(line) as Partial<AckedWrite>;
      if (
        typeof a.i === "number" &&
        typeof a.lsn === "number" &&
        typeof a.lba === "number" &&
        typeof a.seq === "number"
      )
        out.push({ i: a.i, lsn: a.lsn, lba: a.lba, seq: a.seq });
    } catch {
      // empty or torn line
    }
  }
  return out;
}
