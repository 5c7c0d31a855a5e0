import type { FileLayer } from "../core/index.ts";
import { decodeCheckpoint, readAll } from "./checkpoint.ts";
import { decodeHeader, extentBytes, VolumeFiles, VolumeLayout, walRegionBytes, type VolumeGeometry } from "./format.ts";
import { VolumeNotFoundError } from "./volume-errors.ts";
import { decodeRecord } from "./wal-record.ts";

/** A read-only look at a volume's files: nothing is replayed, erased or synced. */
export interface VolumeInspection {
  geometry: VolumeGeometry;
  files: Record<string, number>;
  checkpoints: ({ slot: number; sequence: number; lsn: number; mapped: number } | { slot: number; problem: string })[];
  ring: {
    validRecords: number;
    invalidSlots: number;
    emptySlots: number;
    minLsn: number | null;
    maxLsn: number | null;
  };
  /** Bytes one WAL slot takes and how many slots a 64 MiB WAL holds in this mode. */
  walSlotBytes: number;
  entriesPer64MiB: number;
}

/**
 * Reads header, file sizes, both checkpoint slots and every ring slot without changing anything.
 * Throws VolumeNotFoundError without a header and HeaderCorruptError on a bad one; file and slot
 * problems are reported, not thrown.
 */
export async function inspectVolume(fl: FileLayer, dir: string): Promise<VolumeInspection> {
  const path = (n: string) => `${dir}/${n}`;
  if (!(await fl.exists(path(VolumeFiles.header)))) throw new VolumeNotFoundError(dir);
  const read = async (n: string): Promise<Uint8Array | undefined> => {
    if (!(await fl.exists(path(n)))) return undefined;
    const f = await fl.open(path(n));
    try {
      return await readAll(f);
    } finally {
      await f.close();
    }
  };
  const geometry = decodeHeader((await read(VolumeFiles.header))!);
  const files: Record<string, number> = {};
  const oneFile = geometry.layout === VolumeLayout.OneFile;
  // The extent (and the one-file layout's volume.dat) is only sized; the WAL is read whole.
  const walFile = oneFile ? VolumeFiles.data : VolumeFiles.wal;
  const walAt = oneFile ? extentBytes(geometry) : 0;
  const names = [
    VolumeFiles.header,
    ...(oneFile ? [VolumeFiles.data] : [VolumeFiles.extent, VolumeFiles.wal]),
    ...VolumeFiles.checkpoints,
  ];
  const checkpoints: VolumeInspection["checkpoints"] = [];
  let wal: Uint8Array | undefined;
  for (const n of names) {
    if (!(await fl.exists(path(n)))) {
      files[n] = -1;
      continue;
    }
    const f = await fl.open(path(n));
    try {
      files[n] = await f.size();
      if (n === walFile) {
        wal = new Uint8Array(Math.max(0, Math.min(walRegionBytes(geometry), files[n] - walAt)));
        await f.read(wal, 0, wal.length, walAt);
      }
    } finally {
      await f.close();
    }
  }
  for (let slot = 0; slot < VolumeFiles.checkpoints.length; slot++) {
    const bytes = (await read(VolumeFiles.checkpoints[slot]!)) ?? new Uint8Array(0);
    const c = decodeCheckpoint(bytes, geometry.blockCount, geometry.physicalBlocks, geometry.walCapacity);
    checkpoints.push(
      typeof c === "string"
        ? { slot, problem: c }
        : { slot, sequence: c.sequence, lsn: c.lsn, mapped: c.map.mappedCount() },
    );
  }
  return {
    geometry,
    files,
    checkpoints,
    ring: ringSummary(geometry, wal),
    walSlotBytes: geometry.walSlotSize,
    entriesPer64MiB: Math.floor((64 << 20) / geometry.walSlotSize),
  };
}

/**
 * Counts the ring's slots by what each holds (a record, something invalid, nothing) and the LSN range of its records.
 */
function ringSummary(geometry: VolumeGeometry, wal: Uint8Array | undefined): VolumeInspection["ring"] {
  const ring = {
    validRecords: 0,
    invalidSlots: 0,
    emptySlots: 0,
    minLsn: null as number | null,
    maxLsn: null as number | null,
  };
  for (let s = 0; s < geometry.walCapacity; s++) {
    const slot = wal?.subarray(s * geometry.walSlotSize, (s + 1) * geometry.walSlotSize) ?? new Uint8Array(0);
    const r = decodeRecord(slot);
    if (r === "empty") ring.emptySlots++;
    else if (typeof r === "string") ring.invalidSlots++;
    else {
      ring.validRecords++;
      ring.minLsn = ring.minLsn === null ? r.lsn : Math.min(ring.minLsn, r.lsn);
      ring.maxLsn = ring.maxLsn === null ? r.lsn : Math.max(ring.maxLsn, r.lsn);
    }
  }
  return ring;
}
