import type { FileHandleLike, FileLayer } from "../core/index.ts";
import { BlockMap } from "./block-map.ts";
import { readAll, writeCheckpoint } from "./checkpoint.ts";
import {
  BLOCK_SIZE,
  decodeHeader,
  defaultSpareBlocks,
  defaultWalCapacity,
  encodeHeader,
  extentBytes,
  geometryProblem,
  slotSizeFor,
  VolumeFiles,
  VolumeLayout,
  VolumeMode,
  walRegionBytes,
  type VolumeGeometry,
} from "./format.ts";
import { fileRegions } from "./file-region.ts";
import { BadRequestError, FileSizeError, VolumeExistsError, VolumeNotFoundError } from "./volume-errors.ts";

/** Parameters of a new volume. */
export interface CreateVolumeOptions {
  blockCount: number;
  mode?: VolumeMode;
  /** WAL ring slots (default defaultWalCapacity(): at least the spare, so the largest write fits; at least 4). */
  walCapacity?: number;
  /** Extra physical blocks for copy-on-write (SmartWAL only; default defaultSpareBlocks()). */
  spareBlocks?: number;
  epoch?: number;
  /** Where extent and WAL live (default DEFAULT_LAYOUT; see VolumeLayout). */
  layout?: VolumeLayout;
}

/** How a create runs (not part of the volume): it may be stopped, and it reports the bytes pre-allocated. */
export interface CreateRun {
  /** Checked between 1 MiB pre-allocation writes; when aborted, its reason is thrown (files stay, headerless). */
  readonly signal?: AbortSignal;
  readonly onAllocated?: (bytes: number, total: number) => void;
}

/** Layout of new volumes (the reason is in docs/volume-format.md, "Why the default layout is …"). */
export const DEFAULT_LAYOUT: VolumeLayout = VolumeLayout.OneFile;

/** The open files of a volume. */
export interface VolumeHandles {
  extent: FileHandleLike;
  wal: FileHandleLike;
  checkpoints: FileHandleLike[];
}

const join = (dir: string, name: string) => `${dir}/${name}`;

/** The geometry `opts` describes; throws BadRequestError when it is impossible. */
export function geometryFor(opts: CreateVolumeOptions): VolumeGeometry {
  const mode = opts.mode ?? VolumeMode.SmartWal;
  if (mode !== VolumeMode.SmartWal && mode !== VolumeMode.Inline)
    throw new BadRequestError(`unknown mode ${String(mode)}`, { mode });
  const spare = mode === VolumeMode.Inline ? 0 : (opts.spareBlocks ?? defaultSpareBlocks(opts.blockCount));
  const g: VolumeGeometry = {
    mode,
    blockSize: BLOCK_SIZE,
    blockCount: opts.blockCount,
    physicalBlocks: opts.blockCount + spare,
    walCapacity: opts.walCapacity ?? defaultWalCapacity(mode, spare),
    walSlotSize: slotSizeFor(mode),
    epoch: opts.epoch ?? 1,
    layout: opts.layout ?? DEFAULT_LAYOUT,
  };
  const problem = geometryProblem(g);
  if (problem || !Number.isInteger(spare) || spare < 0)
    throw new BadRequestError(`invalid volume geometry: ${problem ?? `spare ${spare}`}`, { ...g });
  return g;
}

/**
 * Creates a volume directory: pre-allocated extent, zeroed WAL ring, both checkpoint slots holding
 * the empty checkpoint, each synced; the header is written and synced last (then the directory),
 * so a crash mid-create leaves no header and no half-made volume that would mount.
 * Throws VolumeExistsError when a header is already there, BadRequestError on a bad geometry.
 */
export async function createVolumeFiles(
  fl: FileLayer,
  dir: string,
  opts: CreateVolumeOptions,
  run: CreateRun = {},
): Promise<VolumeGeometry> {
  const g = geometryFor(opts);
  await fl.mkdirp(dir);
  if (await fl.exists(join(dir, VolumeFiles.header))) throw new VolumeExistsError(dir);
  const total = extentBytes(g) + walRegionBytes(g);
  let allocated = 0;
  // Pre-allocate by writing zeros (not a sparse truncate): later overwrites then need no block
  // allocation, so an fdatasync flushes data only, with no filesystem journal commit.
  const sized = async (name: string, bytes: number) => {
    const f = await fl.open(join(dir, name), { create: true });
    await f.truncate(0);
    const zeros = new Uint8Array(Math.min(bytes, 1 << 20));
    for (let off = 0; off < bytes; off += zeros.length) {
      if (run.signal?.aborted) {
        await f.close();
        run.signal.throwIfAborted();
      }
      const n = Math.min(zeros.length, bytes - off);
      await f.write(zeros, 0, n, off);
      allocated += n;
      run.onAllocated?.(allocated, total);
    }
    return f;
  };
  const dataFiles =
    g.layout === VolumeLayout.OneFile
      ? [await sized(VolumeFiles.data, extentBytes(g) + walRegionBytes(g))]
      : [await sized(VolumeFiles.extent, extentBytes(g)), await sized(VolumeFiles.wal, walRegionBytes(g))];
  for (const f of dataFiles) await f.datasync();
  for (const f of dataFiles) await f.close();
  for (const name of VolumeFiles.checkpoints) {
    const f = await sized(name, 0);
    await writeCheckpoint(f, {
      sequence: 0,
      lsn: 0,
      ringStartSlot: 0,
      epoch: g.epoch,
      map: new BlockMap(g.blockCount),
    });
    await f.close();
  }
  const header = await fl.open(join(dir, VolumeFiles.header), { create: true });
  const bytes = encodeHeader(g);
  await header.write(bytes, 0, bytes.length, 0);
  await header.datasync();
  await header.close();
  await fl.syncDir(dir);
  return g;
}

/**
 * Reads and validates the header, opens the other files and checks their sizes. Throws
 * VolumeNotFoundError (no header), HeaderCorruptError, or FileSizeError when the extent or WAL file
 * (one-file layout: `volume.dat`, extent and WAL region) is shorter than the geometry (a silently shorter volume is
 * never mounted). A missing checkpoint file opens as empty: mount falls back to the other slot.
 */
export async function openVolumeFiles(
  fl: FileLayer,
  dir: string,
): Promise<{ geometry: VolumeGeometry; handles: VolumeHandles }> {
  let header: FileHandleLike;
  try {
    header = await fl.open(join(dir, VolumeFiles.header));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new VolumeNotFoundError(dir);
    throw err;
  }
  let geometry: VolumeGeometry;
  try {
    geometry = decodeHeader(await readAll(header));
  } finally {
    await header.close();
  }
  const opened: FileHandleLike[] = [];
  try {
    const need = async (name: string, bytes: number) => {
      let f: FileHandleLike;
      try {
        f = await fl.open(join(dir, name));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT")
          throw new FileSizeError(`${name} is missing`, { file: name });
        throw err;
      }
      opened.push(f);
      const size = await f.size();
      if (size < bytes)
        throw new FileSizeError(`${name} is ${size} bytes, header requires ${bytes}`, {
          file: name,
          size,
          required: bytes,
        });
      return f;
    };
    const g = geometry;
    let extent: FileHandleLike;
    let wal: FileHandleLike;
    if (g.layout === VolumeLayout.OneFile) {
      const data = await need(VolumeFiles.data, extentBytes(g) + walRegionBytes(g));
      [extent, wal] = fileRegions(data, [
        { base: 0, length: extentBytes(g) },
        { base: extentBytes(g), length: walRegionBytes(g) },
      ]) as [FileHandleLike, FileHandleLike];
    } else {
      extent = await need(VolumeFiles.extent, extentBytes(g));
      wal = await need(VolumeFiles.wal, walRegionBytes(g));
    }
    const checkpoints: FileHandleLike[] = [];
    for (const name of VolumeFiles.checkpoints) {
      const f = await fl.open(join(dir, name), { create: true });
      opened.push(f);
      checkpoints.push(f);
    }
    return { geometry, handles: { extent, wal, checkpoints } };
  } catch (err) {
    await Promise.all(opened.map((f) => f.close().catch(() => undefined)));
    throw err;
  }
}
