import type { FileHandleLike } from "../core/index.ts";
import { BLOCK_SIZE, RECORD_SIZE, VolumeMode, type VolumeGeometry } from "./format.ts";
import { decodeRecord, RecordFlag, RecordProblem, type WalRecord } from "./wal-record.ts";

/** Why a ring position does not continue the log. `end`: every slot after the checkpoint was read. */
export const ReplayStop = {
  Empty: "empty",
  BadCrc: "bad_crc",
  BadMagic: "bad_magic",
  BadField: "bad_field",
  LsnGap: "lsn_gap",
  /** A deferred-barrier record past the sync mark whose extent data never reached the disk. */
  UnsyncedData: "unsynced_data",
  End: "end",
} as const;
/** One of the ReplayStop values. */
export type ReplayStop = (typeof ReplayStop)[keyof typeof ReplayStop];

/** Bytes a disk writes atomically: a 64-byte SmartWAL slot never straddles one. */
export const SECTOR_SIZE = 512;

/**
 * What a ring position holds. `record`: the record with the LSN expected there. `hole`: what a
 * power cut can leave where a record was being written — the slot's old content (zeros, or an
 * older lap's record) or, for inline slots that span sectors, a record with a torn payload.
 * `garbage`: bytes no crash can produce (a 64-byte SmartWAL slot sits inside one atomic sector,
 * so it is always wholly old or wholly new): damage.
 */
export type Position =
  { kind: "record"; record: WalRecord } | { kind: "hole" | "garbage"; why: ReplayStop; foundLsn?: number };

/** The ring read once from the checkpoint's start slot, one entry per position. */
export interface RingScan {
  /** LSN expected at position 0 (checkpoint LSN + 1); position p expects firstLsn + p. */
  firstLsn: number;
  /** Slot of position 0. */
  startSlot: number;
  capacity: number;
  /** Slots per atomic sector (SmartWAL), 0 when slots span sectors (inline). */
  sectorSlots: number;
  positions: Position[];
  /** Highest durable watermark carried by any record found at its position (0 when none). */
  maxWatermark: number;
}

const CHUNK_SLOTS = 4096;

/**
 * Reads every slot of the ring, starting at `startSlot`, and classifies it against the LSN expected there. Only I/O
 * errors throw.
 */
export async function scanRing(
  g: VolumeGeometry,
  wal: FileHandleLike,
  checkpointLsn: number,
  startSlot: number,
): Promise<RingScan> {
  const cap = g.walCapacity;
  const firstLsn = checkpointLsn + 1;
  const positions: Position[] = new Array(cap);
  let maxWatermark = 0;
  for (let i = 0, n = 0; i < cap; i += n) {
    const slot0 = (startSlot + i) % cap;
    n = Math.min(CHUNK_SLOTS, cap - i, cap - slot0);
    const buf = new Uint8Array(n * g.walSlotSize);
    await wal.read(buf, 0, buf.length, slot0 * g.walSlotSize);
    for (let k = 0; k < n; k++) {
      const p = classify(decodeRecord(buf.subarray(k * g.walSlotSize, (k + 1) * g.walSlotSize)), firstLsn + i + k, g);
      positions[i + k] = p;
      if (p.kind === "record") maxWatermark = Math.max(maxWatermark, p.record.durableLsn ?? 0);
    }
  }
  const sectorSlots = g.mode === VolumeMode.SmartWal ? SECTOR_SIZE / RECORD_SIZE : 0;
  return { firstLsn, startSlot, capacity: cap, sectorSlots, positions, maxWatermark };
}

/** Classifies one decoded slot against the LSN expected there. */
function classify(decoded: WalRecord | RecordProblem, expected: number, g: VolumeGeometry): Position {
  if (decoded === RecordProblem.Empty) return { kind: "hole", why: ReplayStop.Empty };
  if (typeof decoded === "string") {
    // Inline slots (64 + 4096 bytes) span sectors, so a torn inline record fails its CRC.
    const tearable = g.mode === VolumeMode.Inline && decoded === RecordProblem.BadCrc;
    return { kind: tearable ? "hole" : "garbage", why: decoded };
  }
  if (decoded.lsn !== expected) {
    // An older lap's record is the slot's previous content; any other LSN cannot be in this slot.
    const older = decoded.lsn < expected && (expected - decoded.lsn) % g.walCapacity === 0;
    return { kind: older ? "hole" : "garbage", why: ReplayStop.LsnGap, foundLsn: decoded.lsn };
  }
  if (fieldProblem(decoded, g)) return { kind: "garbage", why: ReplayStop.BadField, foundLsn: decoded.lsn };
  return { kind: "record", record: decoded };
}

/** True when a CRC-valid record names something outside the geometry (this code never writes one). */
function fieldProblem(r: WalRecord, g: VolumeGeometry): boolean {
  if (r.epoch > g.epoch) return true;
  if (r.lba + r.blockCount > g.blockCount) return true;
  if (r.flag === RecordFlag.Trim) return r.payload !== undefined;
  // Write records describe exactly one block, so each block is verified by its own CRC.
  if (r.blockCount !== 1) return true;
  if (g.mode === VolumeMode.Inline) return !(r.payload && r.payload.length === BLOCK_SIZE);
  if (r.payload || r.physicalOffset % BLOCK_SIZE !== 0) return true;
  return r.physicalOffset / BLOCK_SIZE + r.blockCount > g.physicalBlocks;
}

/** A ring position inside the log whose record is unreadable: damage, not a torn tail. */
export interface LostRecord {
  lsn: number;
  slot: number;
  problem: ReplayStop;
}

/** How the scanned ring continues the checkpoint: the log, its losses and where it ends. */
export interface LogWalk {
  /** Records of the log in LSN order (LSNs skip the lost ones). */
  records: WalRecord[];
  lost: LostRecord[];
  /** First LSN that is not part of the log; every LSN below it is a record or lost. */
  endLsn: number;
  stop: { reason: ReplayStop; slot: number; foundLsn?: number };
  /** Slots past the end that hold a record or garbage: erased at mount so they cannot follow new records. */
  staleSlots: number[];
}

/**
 * Walks the scanned positions in LSN order. The log ends at the first hole a crash can explain:
 * past `proofLsn` (the highest LSN known durable) and, for SmartWAL, in a sector holding no
 * garbage (a damaged sector's zeros prove nothing). Any other hole, and garbage anywhere before
 * the end, is a lost record; the walk goes on past it, so a valid later record is never cut off
 * by damage. A hole past the proof followed by valid records is a torn tail: unsynced writes may
 * reach the disk in any order, so those later records were never durable and are erased.
 */
export function walkLog(scan: RingScan, proofLsn: number): LogWalk {
  const records: WalRecord[] = [];
  const lost: LostRecord[] = [];
  const slotOf = (p: number) => (scan.startSlot + p) % scan.capacity;
  const sectorOf = (p: number) => (scan.sectorSlots > 0 ? Math.floor(slotOf(p) / scan.sectorSlots) : -1 - p);
  const damagedSectors = new Set<number>();
  if (scan.sectorSlots > 0) scan.positions.forEach((at, p) => at.kind === "garbage" && damagedSectors.add(sectorOf(p)));
  for (let p = 0; p < scan.capacity; p++) {
    const at = scan.positions[p]!;
    const lsn = scan.firstLsn + p;
    if (at.kind === "record") {
      records.push(at.record);
      continue;
    }
    const tornTail = at.kind === "hole" && lsn > proofLsn && !damagedSectors.has(sectorOf(p));
    if (!tornTail) {
      lost.push({ lsn, slot: slotOf(p), problem: at.why });
      continue;
    }
    const staleSlots: number[] = [];
    for (let q = p + 1; q < scan.capacity; q++) {
      const later = scan.positions[q]!;
      if (later.kind === "record" || later.kind === "garbage") staleSlots.push(slotOf(q));
    }
    const stop = { reason: at.why, slot: slotOf(p), ...(at.foundLsn !== undefined ? { foundLsn: at.foundLsn } : {}) };
    return { records, lost, endLsn: lsn, stop, staleSlots };
  }
  return {
    records,
    lost,
    endLsn: scan.firstLsn + scan.capacity,
    stop: { reason: ReplayStop.End, slot: scan.startSlot },
    staleSlots: [],
  };
}
