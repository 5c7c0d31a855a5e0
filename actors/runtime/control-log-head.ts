/**
 * The controller's persisted control-log head: the newest entry it verified (position + hash),
 * kept in its state directory across restarts. On start, the log must still hold that entry,
 * unchanged; a log that ends before it regressed (acknowledged events were lost, or the stream was
 * recreated), one that holds something else there forked, and a stream that is gone vanished.
 * The controller refuses all three instead of serving from a log it cannot trust.
 */
import { crc32 } from "node:zlib";
import { CustodyError } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import { ControlLogRegressionCode, ControlLogRegressionError, isSnapshotRecord } from "../../custody/index.ts";
import type { ControlLogStore } from "../../custody/index.ts";

/** A verified control-log head. */
export interface ControlLogHead {
  readonly region: string;
  readonly seq: number;
  readonly hash: string;
}

/** Thrown when the head file exists but cannot be trusted (bad checksum, not a head, another region). */
export class ControlLogHeadStateError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("control_head_damaged", message, detail);
  }
}

/** The head file's name in the controller's state directory. */
export const CONTROL_HEAD_FILE = "control-head.json";

const HASH = /^[0-9a-f]{64}$/;

/**
 * The head persisted in `dir` for `region` (undefined when none was ever written). Throws
 * ControlLogHeadStateError for a damaged file or one that names another region.
 */
export async function readControlLogHead(
  files: FileLayer,
  dir: string,
  region: string,
): Promise<ControlLogHead | undefined> {
  const path = `${dir}/${CONTROL_HEAD_FILE}`;
  if (!(await files.exists(path))) return undefined;
  const h = await files.open(path);
  let text: string;
  try {
    const size = await h.size();
    if (size > 4096) throw new ControlLogHeadStateError(`control head file ${path} is ${size} bytes`, { path, size });
    const b = Buffer.alloc(size);
    await h.read(b, 0, size, 0);
    text = b.toString("utf8");
  } finally {
    await h.close();
  }
  let parsed: { head?: unknown; crc?: unknown };
  try {
    parsed = JSON.parse(text) as { head?: unknown; crc?: unknown };
  } catch {
    throw new ControlLogHeadStateError(`control head file ${path} is not JSON`, { path });
  }
  const head = parsed.head as ControlLogHead | undefined;
  const body = JSON.stringify(head ?? null);
  const ok =
    head !== undefined &&
    typeof head === "object" &&
    head !== null &&
    typeof head.region === "string" &&
    Number.isSafeInteger(head.seq) &&
    head.seq >= 1 &&
    typeof head.hash === "string" &&
    HASH.test(head.hash) &&
    parsed.crc === crc32(Buffer.from(body)) >>> 0;
  if (!ok) throw new ControlLogHeadStateError(`control head file ${path} is damaged`, { path });
  if (head.region !== region)
    throw new ControlLogHeadStateError(`control head file ${path} belongs to region ${head.region}, not ${region}`, {
      path,
      region: head.region,
    });
  return { region: head.region, seq: head.seq, hash: head.hash };
}

/** Persists `head` in `dir`: written to a temporary file, synced, renamed over the old one, directory synced. */
export async function writeControlLogHead(files: FileLayer, dir: string, head: ControlLogHead): Promise<void> {
  await files.mkdirp(dir);
  const clean = { region: head.region, seq: head.seq, hash: head.hash };
  const body = JSON.stringify(clean);
  const bytes = Buffer.from(JSON.stringify({ head: clean, crc: crc32(Buffer.from(body)) >>> 0 }) + "\n");
  const tmp = `${dir}/${CONTROL_HEAD_FILE}.tmp`;
  const h = await files.open(tmp, { create: true });
  try {
    await h.truncate(0);
    await h.write(bytes, 0, bytes.length, 0);
    await h.datasync();
  } finally {
    await h.close();
  }
  await files.rename(tmp, `${dir}/${CONTROL_HEAD_FILE}`);
  await files.syncDir(dir);
}

/**
 * Checks that `store` still holds `head` unchanged. Throws ControlLogRegressionError
 * `log_regression` (the log ends before the head, or no longer holds it) or `log_fork` (another
 * entry at that position), and the store's error when the stream vanished (`control_log_missing`
 * for JetStream).
 */
export async function checkControlLogHead(store: ControlLogStore, head: ControlLogHead): Promise<void> {
  const last = await store.lastSeq();
  if (last < head.seq) {
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.log_regression,
      `control log ${store.region} ends at ${last}, before the head ${head.seq} this controller verified`,
      { seen: head.seq, last },
    );
  }
  const at = (await store.readRecordsFrom(head.seq))[0];
  // The head was compacted away below an operator's snapshot: the follower checks that snapshot instead
  // (custody/control-snapshot.ts).
  if (at !== undefined && at.seq > head.seq && isSnapshotRecord(at)) return;
  if (at === undefined || at.seq !== head.seq) {
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.log_regression,
      `control log ${store.region} no longer holds the head ${head.seq} this controller verified`,
      { seen: head.seq, last },
    );
  }
  if (at.hash !== head.hash) {
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.log_fork,
      `control log ${store.region} holds a different event at ${head.seq} than the one this controller verified`,
      { seq: head.seq, seen: head.hash, found: at.hash },
    );
  }
}
