import { CustodyError } from "../../core/custody-error.ts";
import { nodeFileLayer, type FileLayer } from "../../core/file-layer.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { openPayload, type WriteRecord } from "../writer/unit-payload.ts";

/**
 * Recovery at a destination: a fresh SmartWAL volume built from an optional base snapshot plus
 * surviving WAL units. Every unit's digest is verified and its payload authenticated with the
 * volume's data key before any byte is applied; writes are applied in LSN order up to the newest
 * cut that is consistent across lanes.
 */

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
 * no contiguous run after the base. The destination is written only after every check passed.
 */
export async function recoverVolume(inp: RecoveryInput): Promise<RecoveryResult> {
  const fl = inp.fileLayer ?? nodeFileLayer;
  const byLane = new Map<string, Map<number, WriteRecord>>();
  for (const l of inp.lanes) byLane.set(l, new Map());
  let verified = 0;
  for (const u of inp.units) {
    if (u.volume !== inp.volume || !byLane.has(u.lane)) continue;
    validateTransportUnit(u);
    verified++;
    const recs = openPayload(inp.dataKey, u, u.payload);
    const m = byLane.get(u.lane)!;
    for (const r of recs) m.set(r.seq, r);
  }
  // Per lane: the contiguous run after the base (bounded by upTo).
  const cut: Record<string, number> = {};
  let consistentLsn = Infinity;
  const chosen: WriteRecord[] = [];
  for (const lane of inp.lanes) {
    const m = byLane.get(lane)!;
    const from = (inp.base?.cut[lane] ?? 0) + 1;
    const seqs = RangeSet.from([...m.keys()].map((s) => [s, s] as const));
    let through = seqs.contiguousThrough(from);
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
  const apply = chosen.filter((r) => r.lsn <= consistentLsn).sort((a, b) => a.lsn - b.lsn || a.lba - b.lba);
  if (inp.lanes.length > 1) {
    for (const lane of inp.lanes) {
      const mine = apply.filter((r) => byLane.get(lane)!.get(r.seq) === r);
      cut[lane] = mine.length > 0 ? Math.max(...mine.map((r) => r.seq)) : (inp.base?.cut[lane] ?? 0);
    }
  }
  await SmartWalVolume.create(inp.dir, { blockCount: inp.blockCount }, fl);
  const vol = await SmartWalVolume.open(inp.dir, { fileLayer: fl });
  try {
    if (inp.base) {
      const base = await SmartWalVolume.open(inp.base.dir, { fileLayer: fl });
      try {
        const chunk = 64;
        for (let lba = 0; lba < inp.blockCount; lba += chunk) {
          const n = Math.min(chunk, inp.blockCount - lba);
          const data = await base.read(lba, n);
          for (let i = 0; i < n; i++) {
            const block = data.subarray(i * BLOCK_SIZE, (i + 1) * BLOCK_SIZE);
            if (block.some((b) => b !== 0)) await vol.write(lba + i, block);
          }
        }
      } finally {
        await base.close();
      }
    }
    for (const r of apply) await vol.write(r.lba, r.data);
    await vol.syncCache();
  } finally {
    await vol.close();
  }
  return { cut, lsn: apply.reduce((m, r) => Math.max(m, r.lsn), 0), unitsVerified: verified, recordsApplied: apply.length, baseUsed: inp.base !== undefined };
}
