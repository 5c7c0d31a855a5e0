import { BLOCK_SIZE } from "../../volume/index.ts";
import { WriteRejectedError, type LaneSpec } from "./writer-config.ts";

/** One lane's piece of a write: its first LBA and where its bytes lie in the write's buffer. */
export interface WritePiece {
  readonly lane: string;
  readonly lba: number;
  readonly from: number;
  readonly to: number;
}

/**
 * Splits a write of `length` bytes at `lba` over the lanes (`ordered` by first LBA). Throws
 * WriteRejectedError for a bad request or when a block lies outside every lane. Pure.
 */
export function splitWrite(ordered: readonly LaneSpec[], volume: string, lba: number, length: number): WritePiece[] {
  if (!Number.isSafeInteger(length) || length <= 0 || length % BLOCK_SIZE !== 0)
    throw new WriteRejectedError(`data must be a positive multiple of ${BLOCK_SIZE} bytes`, { length });
  if (!Number.isSafeInteger(lba) || lba < 0)
    throw new WriteRejectedError("lba must be a non-negative integer", { lba });
  const blocks = length / BLOCK_SIZE;
  const out: WritePiece[] = [];
  let at = lba;
  while (at < lba + blocks) {
    const spec = ordered.find((l) => l.fromLba <= at && at <= l.toLba);
    if (spec === undefined) throw new WriteRejectedError(`lba ${at} belongs to no lane of ${volume}`, { lba: at });
    const end = Math.min(lba + blocks - 1, spec.toLba);
    out.push({ lane: spec.lane, lba: at, from: (at - lba) * BLOCK_SIZE, to: (end - lba + 1) * BLOCK_SIZE });
    at = end + 1;
  }
  return out;
}
