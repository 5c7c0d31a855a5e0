/** Marker for an unmapped LBA (never written, or trimmed): it reads back as zeros. */
export const UNMAPPED = -1;

/**
 * The LBA → physical block index, with the per-block CRC32 and the LSN that set each entry, plus
 * a damaged flag. Typed arrays keep a million-LBA map compact. Pure in-memory state.
 */
export class BlockMap {
  readonly phys: Int32Array;
  readonly crc: Uint32Array;
  readonly lsn: Float64Array;
  readonly damaged: Uint8Array;

  constructor(readonly blockCount: number) {
    this.phys = new Int32Array(blockCount).fill(UNMAPPED);
    this.crc = new Uint32Array(blockCount);
    this.lsn = new Float64Array(blockCount);
    this.damaged = new Uint8Array(blockCount);
  }

  /** Points `lba` at `phys` with its data CRC; returns the physical block it replaced (or UNMAPPED). */
  set(lba: number, phys: number, crc: number, lsn: number): number {
    const old = this.phys[lba]!;
    this.phys[lba] = phys;
    this.crc[lba] = crc >>> 0;
    this.lsn[lba] = lsn;
    this.damaged[lba] = 0;
    return old;
  }

  /** Unmaps `lba` (trim); returns the physical block it replaced (or UNMAPPED). */
  unmap(lba: number, lsn: number): number {
    return this.set(lba, UNMAPPED, 0, lsn);
  }

  /** A deep copy (checkpoint snapshots and checkpoint-consistent reads use it). */
  clone(): BlockMap {
    const m = new BlockMap(this.blockCount);
    m.phys.set(this.phys);
    m.crc.set(this.crc);
    m.lsn.set(this.lsn);
    m.damaged.set(this.damaged);
    return m;
  }

  /** LBAs currently flagged damaged, ascending. */
  damagedLbas(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.blockCount; i++) if (this.damaged[i]) out.push(i);
    return out;
  }

  /** Number of mapped LBAs. */
  mappedCount(): number {
    let n = 0;
    for (let i = 0; i < this.blockCount; i++) if (this.phys[i]! !== UNMAPPED) n++;
    return n;
  }
}
