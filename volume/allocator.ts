/** Reasons a physical block is held (bit flags); a block with no reason is free. */
export const Hold = {
  /** The current LBA map points at it. */
  Live: 1,
  /** The durable (or in-flight) checkpoint names it: checkpoint-consistent reads may still use it. */
  Checkpoint: 2,
  /** Superseded by a record that is not durable yet: a crash could still bring it back. */
  Pending: 4,
  /** A checkpoint-consistent reader is copying it. */
  Reader: 8,
} as const;
/** One of the Hold values. */
export type Hold = (typeof Hold)[keyof typeof Hold];

/** A contiguous run of physical blocks. */
export interface PhysicalRun {
  start: number;
  count: number;
}

/**
 * Copy-on-write physical block allocator. It is rebuilt at mount from the LBA map and the
 * checkpoint (I4: nothing about free space is persisted, so orphaned blocks from a crash between
 * extent write and WAL record are simply free). A block is reused only when it is neither live,
 * nor named by the checkpoint, nor superseded by a record that is still undurable.
 */
export class Allocator {
  private readonly refs: Uint8Array;
  private free: number;
  private cursor = 0;
  /** Superseded blocks waiting for their superseding LSN to become durable, in LSN order. */
  private readonly pending: { lsn: number; phys: number }[] = [];

  constructor(readonly physicalBlocks: number) {
    this.refs = new Uint8Array(physicalBlocks);
    this.free = physicalBlocks;
  }

  /** Free blocks right now. */
  freeCount(): number {
    return this.free;
  }

  /** Hold flags of block `p` (0 = free). */
  holds(p: number): number {
    return this.refs[p]!;
  }

  /** Adds hold `h` to block `p`. */
  hold(p: number, h: Hold): void {
    const before = this.refs[p]!;
    if (before === 0) this.free--;
    this.refs[p] = before | h;
  }

  /** Removes hold `h` from block `p`; the block becomes free when no hold remains. */
  release(p: number, h: Hold): void {
    const before = this.refs[p]!;
    if (before === 0) return;
    const after = before & ~h;
    this.refs[p] = after;
    if (after === 0) this.free++;
  }

  /**
   * Takes `n` free blocks (next-fit from a moving cursor, so consecutive allocations tend to be
   * contiguous) and marks them live. Returns the runs, or undefined (and takes nothing) when fewer
   * than `n` blocks are free.
   */
  allocate(n: number): PhysicalRun[] | undefined {
    if (n > this.free) return undefined;
    const runs: PhysicalRun[] = [];
    let got = 0;
    let p = this.cursor;
    while (got < n) {
      if (this.refs[p] === 0) {
        this.hold(p, Hold.Live);
        const last = runs[runs.length - 1];
        if (last && last.start + last.count === p) last.count++;
        else runs.push({ start: p, count: 1 });
        got++;
      }
      p = p + 1 === this.physicalBlocks ? 0 : p + 1;
      // A run never wraps past the end of the extent: start a new one at 0.
      if (p === 0 && runs.length > 0) runs.push({ start: -1, count: 0 });
    }
    this.cursor = p;
    return runs.filter((r) => r.count > 0);
  }

  /** Block `p` stopped being live because the record with `lsn` replaced it; freed once `lsn` is durable. */
  supersede(p: number, lsn: number): void {
    this.hold(p, Hold.Pending);
    this.release(p, Hold.Live);
    this.pending.push({ lsn, phys: p });
  }

  /** Everything up to `lsn` is durable: drop the Pending hold of blocks superseded at or below it. */
  durableThrough(lsn: number): void {
    let i = 0;
    while (i < this.pending.length && this.pending[i]!.lsn <= lsn) {
      this.release(this.pending[i]!.phys, Hold.Pending);
      i++;
    }
    if (i > 0) this.pending.splice(0, i);
  }

  /** Replaces the Checkpoint holds with exactly the blocks in `blocks`. */
  setCheckpointHolds(blocks: Iterable<number>): void {
    for (let p = 0; p < this.physicalBlocks; p++) if (this.refs[p]! & Hold.Checkpoint) this.release(p, Hold.Checkpoint);
    for (const p of blocks) this.hold(p, Hold.Checkpoint);
  }
}
