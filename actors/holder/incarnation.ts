import { crc32 } from "node:zlib";
import { CustodyError } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";

/**
 * A holder's incarnation, claimed from durable state. Every start is a new incarnation, one above
 * the last one this data directory ever claimed (and above what the control log already admitted),
 * and the claim is made durable before the holder serves — so a crash at any point can never make
 * two processes speak as the same incarnation. A hand-edited number is never trusted: asking for
 * one that is not above everything seen is refused.
 */

/** Thrown when a start would reuse an incarnation (or the state file is damaged). */
export class IncarnationReusedError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("incarnation_reused", message, detail);
  }
}

/** Thrown when the incarnation file exists but cannot be trusted (bad checksum or size). */
export class IncarnationStateError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("incarnation_state_damaged", message, detail);
  }
}

const FILE = "incarnation";
const SIZE = 12; // u64 (as f64) incarnation, u32 crc32 of the first 8 bytes

/** The last incarnation recorded in `dir` (0 when none). Throws IncarnationStateError for a damaged file. */
export async function lastIncarnation(files: FileLayer, dir: string, name = FILE): Promise<number> {
  const path = `${dir}/${name}`;
  if (!(await files.exists(path))) return 0;
  const h = await files.open(path);
  try {
    const b = Buffer.alloc(SIZE);
    const n = await h.read(b, 0, SIZE, 0);
    if (n !== SIZE || b.readUInt32LE(8) !== crc32(b.subarray(0, 8)) >>> 0)
      throw new IncarnationStateError(`incarnation file ${path} is damaged`, { path, bytes: n });
    return b.readDoubleLE(0);
  } finally {
    await h.close();
  }
}

/**
 * Claims the next incarnation for the holder whose state lives in `dir`: one above both the last
 * one recorded there and `admitted` (the control log's current incarnation of this holder, when
 * known). `name` is the file (default `incarnation`; a volume writer claims its `term` the same
 * way). With `requested`, that exact number is claimed, and refused with IncarnationReusedError
 * unless it is above both. The new number is written to a temporary file, synced, renamed over the
 * old one and the directory synced before it is returned.
 */
export async function claimIncarnation(
  files: FileLayer,
  dir: string,
  opts: { admitted?: number; requested?: number; name?: string } = {},
): Promise<number> {
  const name = opts.name ?? FILE;
  await files.mkdirp(dir);
  const floor = Math.max(await lastIncarnation(files, dir, name), opts.admitted ?? 0);
  if (opts.requested !== undefined && opts.requested <= floor) {
    throw new IncarnationReusedError(`incarnation ${opts.requested} was already used (the newest seen is ${floor})`, {
      requested: opts.requested,
      newest: floor,
      dir,
    });
  }
  const next = opts.requested ?? floor + 1;
  const b = Buffer.alloc(SIZE);
  b.writeDoubleLE(next, 0);
  b.writeUInt32LE(crc32(b.subarray(0, 8)) >>> 0, 8);
  const tmp = `${dir}/${name}.tmp`;
  const h = await files.open(tmp, { create: true });
  try {
    await h.truncate(0);
    await h.write(b, 0, SIZE, 0);
    await h.datasync();
  } finally {
    await h.close();
  }
  await files.rename(tmp, `${dir}/${name}`);
  await files.syncDir(dir);
  return next;
}
