/**
 * The demo's write workload as the checker sees it: the acknowledged writes a writer logged, the
 * LSN offset of a volume's writes, and the volume content the first writes imply — the reference a
 * recovered volume is compared with byte for byte (the writers' own workload, actors/runtime/workload.ts).
 * Also seeded block contents for a hand-driven writer (blockData, seedOf, lbaOf, contentThrough).
 */
import { CustodyError } from "../../core/index.ts";
import { readAckLog, workloadWrite } from "../../actors/runtime/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";

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

/** Seed of write `k` on `volume`: volumes get different contents. */
export function seedOf(volume: string, k: number): number {
  let h = 0;
  for (const c of volume) h = (h * 31 + c.charCodeAt(0)) % 1_000_003;
  return h * 7 + k + 1;
}

/** One acknowledged write: the volume's `k`-th, with the LSN and lane sequence the writer gave it. */
export interface AckedWrite {
  readonly volume: string;
  readonly k: number;
  readonly lsn: number;
  readonly seq: number;
}

/** Thrown when acknowledgements do not follow the write order (consecutive LSNs) the checker relies on. */
export class WorkloadOrderError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("workload_out_of_order", "a volume's writes did not get consecutive LSNs", detail);
  }
}

/**
 * `lsn - k × blocks` of a volume's writes (an LSN counts blocks). A volume's writes reach it in
 * write order (several may be in flight), so the k-th write has LSN k × blocks + offset; a write the launcher never saw
 * acknowledged (its writer was killed) still has that LSN, which lets a recovery that reaches it
 * be checked too. Throws WorkloadOrderError.
 */
export function lsnOffset(acks: readonly AckedWrite[], blocks: number): number {
  const offsets = new Set(acks.map((a) => a.lsn - a.k * blocks));
  if (offsets.size > 1) throw new WorkloadOrderError({ offsets: [...offsets] });
  return offsets.values().next().value ?? blocks;
}

/** The content of `volume` after its writes with LSN ≤ `lsn`, the k-th write having LSN k × blocks + `offset`. */
export function contentThrough(
  volume: string,
  blockCount: number,
  blocks: number,
  offset: number,
  lsn: number,
): Uint8Array {
  const out = new Uint8Array(blockCount * BLOCK_SIZE);
  for (let k = 0; k * blocks + offset <= lsn; k++)
    out.set(blockData(seedOf(volume, k), blocks), lbaOf(k, blockCount, blocks) * BLOCK_SIZE);
  return out;
}

/**
 * The acknowledged writes a volume's writer logged (`custody run writer`'s `ackLog`: one JSON line
 * per write, appended after its sync), as AckedWrites of `volume`. A line torn by the SIGKILL that
 * ended the writer is not an acknowledgement the application saw, and is skipped.
 */
export function readVolumeAckLog(path: string, volume: string): AckedWrite[] {
  return readAckLog(path).map((a) => ({ volume, k: a.i, lsn: a.lsn, seq: a.seq }));
}

/**
 * The content of a volume written by `custody run writer`'s workload (`blocks` per write) after its
 * writes with LSN ≤ `lsn`, the k-th write having LSN k × blocks + `offset` (see actors/runtime/workload.ts).
 */
export function workloadContentThrough(blockCount: number, blocks: number, offset: number, lsn: number): Uint8Array {
  const out = new Uint8Array(blockCount * BLOCK_SIZE);
  // Only the last write to each slot shows: the writes of the final round over the slots.
  const last = Math.floor((lsn - offset) / blocks);
  for (let k = Math.max(0, last - Math.floor(blockCount / blocks) + 1); k <= last; k++) {
    const w = workloadWrite(k, blocks, blockCount);
    out.set(w.data, w.lba * BLOCK_SIZE);
  }
  return out;
}
