import { CustodyError } from "../../core/index.ts";
import { nodeFileLayer, type FileLayer } from "../../core/index.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import {
  BLOCK_SIZE,
  discardStagedVolume,
  openStagedVolume,
  sealStagedVolume,
  stageVolume,
  VolumeExistsError,
} from "../../volume/index.ts";
import { SmartWalVolume } from "../../volume/index.ts";
import { openPayload, type WriteRecord } from "../../transport/protocol/index.ts";
import { checkBuiltVolume, type BuildProgress } from "./built-volume-check.ts";

/**
 * Recovery at a destination: a fresh SmartWAL volume built from an optional base snapshot plus
 * surviving WAL units. Every unit's digest is verified and its payload authenticated with the
 * volume's data key before any byte is applied; writes are applied in LSN order up to the newest
 * cut that is consistent across lanes. The volume is built staged (its files `.partial`, mode
 * 0600, no header: nothing mounts it), read back and compared with what was applied, and only
 * then sealed under its real names; a build that fails or is stopped removes its partial files.
 */

export type { BuildPhase, BuildProgress } from "./built-volume-check.ts";

/** Thrown when surviving units cannot rebuild the requested cut (a gap after the base). */
export class RecoveryGapError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("recovery_gap", "surviving units do not cover the sequences after the base", detail);
  }
}

/** A base snapshot: a SmartWAL volume directory and the lane cut it contains. */
export interface RecoveryBase {
  readonly dir: string;
  readonly cut: Readonly<Record<string, number>>;
}

export interface RecoveryInput {
  readonly volume: string;
  /** Destination directory of the new volume (must not exist). */
  readonly dir: string;
  readonly blockCount: number;
  readonly lanes: readonly string[];
  readonly dataKey: Uint8Array;
  /** Units gathered from survivors (any order, duplicates allowed). */
  readonly units: readonly TransportUnit[];
  readonly base?: RecoveryBase;
  /** Upper bound per lane (e.g. the cut the policy engine predicted); default: as far as units reach. */
  readonly upTo?: Readonly<Record<string, number>>;
  /** The writer's last known heads (a consistency manifest): a lane complete to its head never limits the cut. */
  readonly knownHeads?: Readonly<Record<string, number>>;
  readonly fileLayer?: FileLayer;
  /** `dir` was staged already (stageRecoveryDestination), e.g. to claim its space before the units were read. */
  readonly staged?: boolean;
  /** Checked between batches: when aborted, its reason is thrown and the partial files are removed. */
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: BuildProgress) => void;
  /** Called with the result before the volume is sealed: a throw leaves nothing at `dir` and is rethrown. */
  readonly accept?: (r: RecoveryResult) => void;
}

/** What recovery produced. */
export interface RecoveryResult {
  /** Lane → last sequence included. */
  readonly cut: Record<string, number>;
  /** Highest source LSN applied (0 when only the base was used). */
  readonly lsn: number;
  readonly unitsVerified: number;
  readonly recordsApplied: number;
  readonly baseUsed: boolean;
}

/**
 * Materializes the volume. Throws UnitDigestError / InvalidUnitError for a corrupt unit,
 * PayloadDecryptError for a payload that does not authenticate, RecoveryGapError when a lane has
 * no contiguous run after the base, RecoveryVerifyError when the built volume does not read back
 * what was applied, VolumeExistsError when `dir` holds a volume. Nothing is written before every
 * unit passed its checks, and nothing at `dir` looks like a volume before the volume is complete.
 */
export async function recoverVolume(inp: RecoveryInput): Promise<RecoveryResult> {
  const fl = inp.fileLayer ?? nodeFileLayer;
  const { byLane, verified } = openUnits(inp.volume, inp.lanes, inp.dataKey, inp.units);
  const { cut, apply } = chooseRecords(inp, byLane);
  if (inp.staged !== true) await stageRecoveryDestination(inp.dir, inp.blockCount, inp);
  try {
    const vol = await openStagedVolume(fl, inp.dir);
    try {
      if (vol.geometry.blockCount !== inp.blockCount)
        throw new CustodyError(
          "recovery_destination_mismatch",
          `the volume staged at ${inp.dir} has ${vol.geometry.blockCount} blocks, the recovery ${inp.blockCount}`,
          { dir: inp.dir },
        );
      if (inp.base) await copyBlocks(inp.base.dir, vol, inp.blockCount, fl, inp.signal);
      await applyRecords(vol, apply, inp.signal, inp.onProgress);
      await vol.syncCache();
    } finally {
      await vol.close();
    }
    await checkBuiltVolume(fl, inp.dir, {
      blockCount: inp.blockCount,
      records: apply,
      ...(inp.base !== undefined ? { baseDir: inp.base.dir } : {}),
      ...(inp.signal !== undefined ? { signal: inp.signal } : {}),
      ...(inp.onProgress !== undefined ? { onProgress: inp.onProgress } : {}),
    });
    const result: RecoveryResult = {
      cut,
      lsn: apply.reduce((m, r) => Math.max(m, r.lsn), 0),
      unitsVerified: verified,
      recordsApplied: apply.length,
      baseUsed: inp.base !== undefined,
    };
    inp.accept?.(result);
    inp.signal?.throwIfAborted();
    await sealStagedVolume(fl, inp.dir);
    return result;
  } catch (err) {
    await discardStagedVolume(fl, inp.dir).catch(() => undefined);
    throw err;
  }
}

/**
 * The records to apply and the cut they reach: per lane the contiguous run after the base (bounded
 * by `upTo`); with several lanes, only records up to the LSN where the first incomplete lane stops,
 * so the lanes' cuts are consistent with each other.
 */
function chooseRecords(
  inp: RecoveryInput,
  byLane: ReturnType<typeof openUnits>["byLane"],
): { cut: Record<string, number>; apply: WriteRecord[] } {
  // Per lane: the contiguous run after the base (bounded by upTo).
  const cut: Record<string, number> = {};
  let consistentLsn = Infinity;
  const chosen: WriteRecord[] = [];
  for (const lane of inp.lanes) {
    const m = byLane.get(lane)!;
    const from = (inp.base?.cut[lane] ?? 0) + 1;
    let through = contiguousFrom(m, from);
    const bound = inp.upTo?.[lane];
    if (bound !== undefined) {
      if (through < bound) throw new RecoveryGapError({ lane, from, through, wanted: bound });
      through = bound;
    }
    cut[lane] = through;
    let laneMaxLsn = 0;
    for (let s = from; s <= through; s++) {
      const r = m.get(s)!;
      chosen.push(r);
      laneMaxLsn = Math.max(laneMaxLsn, r.lsn);
    }
    // A lane that stops before its known head limits the cross-lane cut to its last LSN.
    const complete = inp.knownHeads?.[lane] !== undefined && through >= inp.knownHeads[lane]!;
    if (!complete && inp.lanes.length > 1 && through >= from) consistentLsn = Math.min(consistentLsn, laneMaxLsn);
  }
  const apply = chosen.filter((r) => r.lsn <= consistentLsn);
  if (inp.lanes.length > 1) {
    for (const lane of inp.lanes) {
      const mine = apply.filter((r) => byLane.get(lane)!.get(r.seq) === r);
      cut[lane] = mine.length > 0 ? mine.reduce((m, r) => Math.max(m, r.seq), 0) : (inp.base?.cut[lane] ?? 0);
    }
  }
  return { cut, apply };
}

/**
 * Stages a fresh volume of `blockCount` blocks at `dir` for recoverVolume (`staged: true`):
 * removes what an earlier, interrupted build left, then pre-allocates the files under their
 * partial names (progress phase `allocate`). Throws VolumeExistsError when `dir` holds a volume;
 * a failed or stopped staging removes its partial files.
 */
export async function stageRecoveryDestination(
  dir: string,
  blockCount: number,
  o: {
    readonly fileLayer?: FileLayer;
    readonly signal?: AbortSignal;
    readonly onProgress?: (p: BuildProgress) => void;
  } = {},
): Promise<void> {
  const fl = o.fileLayer ?? nodeFileLayer;
  try {
    await stageVolume(
      fl,
      dir,
      { blockCount },
      {
        ...(o.signal !== undefined ? { signal: o.signal } : {}),
        onAllocated: (bytes, total) => o.onProgress?.({ phase: "allocate", done: bytes, total, bytes }),
      },
    );
  } catch (err) {
    // A volume already there is not ours to touch; anything else leaves no partial files behind.
    if (err instanceof VolumeExistsError) throw err;
    await discardStagedVolume(fl, dir).catch(() => undefined);
    throw err;
  }
}

/**
 * Verifies every unit of `volume` on `lanes` (digest, then payload authentication with the data key)
 * and returns its records by lane and sequence. Throws on the first unit that fails a check.
 */
export function openUnits(
  volume: string,
  lanes: readonly string[],
  dataKey: Uint8Array,
  units: readonly TransportUnit[],
): { byLane: Map<string, Map<number, WriteRecord>>; verified: number } {
  const byLane = new Map<string, Map<number, WriteRecord>>();
  for (const l of lanes) byLane.set(l, new Map());
  let verified = 0;
  for (const u of units) {
    if (u.volume !== volume || !byLane.has(u.lane)) continue;
    validateTransportUnit(u);
    verified++;
    const recs = openPayload(dataKey, u, u.payload);
    const m = byLane.get(u.lane)!;
    for (const r of recs) m.set(r.seq, r);
  }
  return { byLane, verified };
}

/** The last sequence of the contiguous run of `records` starting at `from` (`from - 1` when `from` is missing). */
export function contiguousFrom(records: ReadonlyMap<number, WriteRecord>, from: number): number {
  let s = from;
  while (records.has(s)) s++;
  return s - 1;
}

/** Writes admitted together: the volume commits them as one group (one barrier), in call order. */
const WRITE_BATCH = 256;

/**
 * Writes `records` into `vol` in LSN order (no sync), in batches the volume group-commits; `signal` is checked between
 * batches.
 */
export async function applyRecords(
  vol: SmartWalVolume,
  records: readonly WriteRecord[],
  signal?: AbortSignal,
  onProgress?: (p: BuildProgress) => void,
): Promise<void> {
  const ordered = [...records].sort((a, b) => a.lsn - b.lsn || a.lba - b.lba);
  const totalBytes = ordered.reduce((n, r) => n + r.data.byteLength, 0);
  let bytes = 0;
  for (let i = 0; i < ordered.length; i += WRITE_BATCH) {
    signal?.throwIfAborted();
    const batch = ordered.slice(i, i + WRITE_BATCH);
    await Promise.all(batch.map((r) => vol.write(r.lba, r.data)));
    bytes += batch.reduce((n, r) => n + r.data.byteLength, 0);
    onProgress?.({ phase: "apply", done: i + batch.length, total: ordered.length, bytes, totalBytes });
  }
}

/** Copies every non-zero block of the volume at `fromDir` into `vol` (no sync); `signal` is checked between chunks. */
export async function copyBlocks(
  fromDir: string,
  vol: SmartWalVolume,
  blockCount: number,
  fl: FileLayer = nodeFileLayer,
  signal?: AbortSignal,
): Promise<void> {
  const base = await SmartWalVolume.open(fromDir, { fileLayer: fl });
  try {
    const chunk = WRITE_BATCH;
    for (let lba = 0; lba < blockCount; lba += chunk) {
      signal?.throwIfAborted();
      const n = Math.min(chunk, blockCount - lba);
      const data = await base.read(lba, n);
      const writes: Promise<number>[] = [];
      for (let i = 0; i < n; i++) {
        const block = data.subarray(i * BLOCK_SIZE, (i + 1) * BLOCK_SIZE);
        if (block.some((b) => b !== 0)) writes.push(vol.write(lba + i, block));
      }
      await Promise.all(writes);
    }
  } finally {
    await base.close();
  }
}
