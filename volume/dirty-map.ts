import { BadRequestError } from "./volume-errors.ts";

/**
 * Per-peer LBA dirty map: which LBAs changed since the peer's confirmed position, and the LSN of
 * each LBA's latest change. Replication catch-up reads exactly these LBAs from a checkpoint
 * snapshot of the extent, so the WAL need not be retained for the peer (memo G5/G6). Pure.
 */
export class DirtyMap {
  private readonly last: Float64Array;
  private dirty = 0;

  /** `since`: the LSN the peer is known to hold; changes after it are tracked. */
  constructor(
    readonly blockCount: number,
    readonly since: number,
  ) {
    this.last = new Float64Array(blockCount);
  }

  /** Records that LBAs lba..lba+count-1 changed at `lsn`. Throws BadRequestError on a range outside the volume. */
  mark(lba: number, count: number, lsn: number): void {
    if (!Number.isInteger(lba) || !Number.isInteger(count) || lba < 0 || count < 1 || lba + count > this.blockCount) {
      throw new BadRequestError(`dirty range ${lba}+${count} outside the volume`, { lba, count });
    }
    for (let i = lba; i < lba + count; i++) {
      if (this.last[i] === 0) this.dirty++;
      this.last[i] = lsn;
    }
  }

  /** True when `lba` changed after the peer's confirmed position. */
  isDirty(lba: number): boolean {
    return (this.last[lba] ?? 0) > 0;
  }

  /** LSN of the latest unconfirmed change of `lba` (0 when clean). */
  lsnOf(lba: number): number {
    return this.last[lba] ?? 0;
  }

  /** Dirty LBAs, ascending; with `throughLsn`, only those whose latest change is at or below it. */
  dirtyLbas(throughLsn = Infinity): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.blockCount; i++) {
      const l = this.last[i]!;
      if (l > 0 && l <= throughLsn) out.push(i);
    }
    return out;
  }

  /** Number of dirty LBAs. */
  size(): number {
    return this.dirty;
  }

  /** The peer durably holds everything up to `lsn`: LBAs whose latest change is ≤ lsn become clean. */
  confirm(lsn: number): void {
    for (let i = 0; i < this.blockCount; i++) {
      const l = this.last[i]!;
      if (l > 0 && l <= lsn) {
        this.last[i] = 0;
        this.dirty--;
      }
    }
  }
}
