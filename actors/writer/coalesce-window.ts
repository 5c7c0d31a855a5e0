import { CustodyError } from "../../core/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";

/**
 * The pure coalescer of a lane's raw records (issue #22 item 1). Given the raw records of one
 * window (a contiguous sequence range), it returns the derived records: only the newest write of
 * each block survives; trims and barriers stay, in order; the window's base-snapshot dependency
 * and consistency manifests are carried unchanged. Applying the derived records in order on the
 * window's base gives the same block image as applying the raw records (the property test checks
 * this), so a derived window is a faithful image *at its end* — never the raw log.
 * No I/O, no clock: the writer's coalescing consumer (its only caller) calls it. The writer's
 * custody records are writes only today; trims and barriers are kept for the volume's other record
 * kinds (the property test covers them).
 */

/** A write of whole blocks (`data` is a multiple of BLOCK_SIZE) at `lba`. */
export interface CoalesceWrite {
  readonly kind: "write";
  readonly seq: number;
  readonly lsn: number;
  readonly lba: number;
  readonly data: Uint8Array;
}
/** A trim: `blockCount` blocks from `lba` read back as zeros afterwards. */
export interface CoalesceTrim {
  readonly kind: "trim";
  readonly seq: number;
  readonly lsn: number;
  readonly lba: number;
  readonly blockCount: number;
}
/** An ordering point (e.g. a sync-cache barrier); it carries no blocks and is never dropped. */
export interface CoalesceBarrier {
  readonly kind: "barrier";
  readonly seq: number;
  readonly lsn: number;
}
export type CoalesceRecord = CoalesceWrite | CoalesceTrim | CoalesceBarrier;

/** One raw window: its records (ascending seq, contiguous from `firstSeq`) and what it carries. */
export interface RawWindow<M = unknown> {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly records: readonly CoalesceRecord[];
  /** Base-snapshot dependency and consistency manifests: carried, never interpreted. */
  readonly carried?: M;
}

/** One derived window: the image of the raw window at `sourceCutSeq` (= the raw window's end). */
export interface DerivedWindow<M = unknown> {
  readonly firstSeq: number;
  /** The raw sequence whose state the records reproduce; earlier raw records are not held. */
  readonly sourceCutSeq: number;
  readonly records: readonly CoalesceRecord[];
  readonly carried?: M;
  /** What coalescing left out of this window: whole records dropped and block bytes omitted. */
  readonly droppedRecords: number;
  readonly droppedBytes: number;
  readonly rawBytes: number;
  readonly derivedBytes: number;
}

/** Limits of one window: over either, the window is split at record boundaries (never truncated). */
export interface CoalesceBudget {
  readonly maxRecords: number;
  readonly maxBytes: number;
}

/** Thrown for a window whose records do not cover its sequence range in order. */
export class CoalesceInputError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_coalesce_window", message, detail);
  }
}

/** Block bytes a record carries. */
function recordBytes(r: CoalesceRecord): number {
  return r.kind === "write" ? r.data.length : 0;
}

function checkWindow(w: RawWindow<unknown>): void {
  if (!(
    Number.isSafeInteger(w.firstSeq) &&
    Number.isSafeInteger(w.lastSeq) &&
    w.firstSeq >= 1 &&
    w.lastSeq >= w.firstSeq
  )) {
    throw new CoalesceInputError("window range is impossible", { firstSeq: w.firstSeq, lastSeq: w.lastSeq });
  }
  if (w.records.length !== w.lastSeq - w.firstSeq + 1)
    throw new CoalesceInputError("window must hold one record per sequence", {
      firstSeq: w.firstSeq,
      lastSeq: w.lastSeq,
      records: w.records.length,
    });
  w.records.forEach((r, i) => {
    if (r.seq !== w.firstSeq + i)
      throw new CoalesceInputError("records must be contiguous and ascending", {
        expected: w.firstSeq + i,
        seq: r.seq,
      });
    if (r.kind === "write" && (r.data.length === 0 || r.data.length % BLOCK_SIZE !== 0))
      throw new CoalesceInputError("a write must carry whole blocks", { seq: r.seq });
    if (r.kind === "trim" && !(Number.isSafeInteger(r.blockCount) && r.blockCount >= 1))
      throw new CoalesceInputError("a trim must cover a block", { seq: r.seq });
  });
}

/**
 * Splits `w` into windows within `budget`, at record boundaries. A single record larger than the
 * byte budget is a window of its own (the budget never truncates data). The carried manifests go
 * with the last piece (they describe the window's end); base dependencies hold for every piece.
 */
export function splitWindow<M>(w: RawWindow<M>, budget: CoalesceBudget): RawWindow<M>[] {
  checkWindow(w);
  const out: RawWindow<M>[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < w.records.length; i++) {
    const b = recordBytes(w.records[i]!);
    if (i > start && (i - start >= budget.maxRecords || bytes + b > budget.maxBytes)) {
      out.push({
        firstSeq: w.records[start]!.seq,
        lastSeq: w.records[i - 1]!.seq,
        records: w.records.slice(start, i),
        ...(w.carried === undefined ? {} : { carried: w.carried }),
      });
      start = i;
      bytes = 0;
    }
    bytes += b;
  }
  out.push({
    firstSeq: w.records[start]!.seq,
    lastSeq: w.lastSeq,
    records: w.records.slice(start),
    ...(w.carried === undefined ? {} : { carried: w.carried }),
  });
  return out;
}

/**
 * Coalesces one window (already within budget). A write's block survives only when no later
 * record of the window touches that block; a partly superseded write keeps its surviving runs,
 * each with the write's own seq and LSN. Trims and barriers are all kept at their place.
 */
export function coalesceWindow<M>(w: RawWindow<M>): DerivedWindow<M> {
  checkWindow(w);
  // Walk backwards: the first touch seen of a block is its newest.
  const touched = new Set<number>();
  const kept: CoalesceRecord[] = [];
  let rawBytes = 0;
  let derivedBytes = 0;
  let droppedRecords = 0;
  for (let i = w.records.length - 1; i >= 0; i--) {
    const r = w.records[i]!;
    rawBytes += recordBytes(r);
    if (r.kind === "barrier") {
      kept.push(r);
      continue;
    }
    if (r.kind === "trim") {
      for (let b = 0; b < r.blockCount; b++) touched.add(r.lba + b);
      kept.push(r);
      continue;
    }
    const blocks = r.data.length / BLOCK_SIZE;
    const runs: CoalesceWrite[] = [];
    let runStart = -1;
    for (let b = 0; b <= blocks; b++) {
      const live = b < blocks && !touched.has(r.lba + b);
      if (live && runStart < 0) runStart = b;
      if (!live && runStart >= 0) {
        runs.push({
          kind: "write",
          seq: r.seq,
          lsn: r.lsn,
          lba: r.lba + runStart,
          data: r.data.subarray(runStart * BLOCK_SIZE, b * BLOCK_SIZE),
        });
        runStart = -1;
      }
    }
    for (let b = 0; b < blocks; b++) touched.add(r.lba + b);
    if (runs.length === 0) droppedRecords++;
    for (let k = runs.length - 1; k >= 0; k--) {
      kept.push(runs[k]!);
      derivedBytes += runs[k]!.data.length;
    }
  }
  kept.reverse();
  return {
    firstSeq: w.firstSeq,
    sourceCutSeq: w.lastSeq,
    records: kept,
    ...(w.carried === undefined ? {} : { carried: w.carried }),
    droppedRecords,
    droppedBytes: rawBytes - derivedBytes,
    rawBytes,
    derivedBytes,
  };
}

/** Totals of what a coalescer did (the figures the writer counts). */
export interface CoalesceTotals {
  windows: number;
  splits: number;
  rawRecords: number;
  derivedRecords: number;
  droppedRecords: number;
  rawBytes: number;
  derivedBytes: number;
}

/**
 * The CPU budget: raw windows queue here and each `tick` coalesces at most `windowsPerTick` of
 * them (after splitting to the window budget). What is left waits for the next tick, in order.
 */
export class CoalesceQueue<M = unknown> {
  private readonly pending: RawWindow<M>[] = [];
  readonly totals: CoalesceTotals = {
    windows: 0,
    splits: 0,
    rawRecords: 0,
    derivedRecords: 0,
    droppedRecords: 0,
    rawBytes: 0,
    derivedBytes: 0,
  };

  constructor(
    private readonly budget: CoalesceBudget,
    private readonly windowsPerTick: number,
  ) {
    if (!(budget.maxRecords >= 1 && budget.maxBytes >= 1 && windowsPerTick >= 1)) {
      throw new CoalesceInputError("coalescing budget must allow at least one record, byte and window", {
        ...budget,
        windowsPerTick,
      });
    }
  }

  /** Queues a raw window (split now when over the window budget). Throws CoalesceInputError. */
  push(w: RawWindow<M>): void {
    const pieces = splitWindow(w, this.budget);
    this.totals.splits += pieces.length - 1;
    this.pending.push(...pieces);
  }

  /** Raw windows not yet coalesced. */
  get backlog(): number {
    return this.pending.length;
  }

  /** Coalesces up to `windowsPerTick` queued windows, oldest first. */
  tick(): DerivedWindow<M>[] {
    const out = this.pending.splice(0, this.windowsPerTick).map((w) => coalesceWindow(w));
    for (const d of out) {
      this.totals.windows++;
      this.totals.rawRecords += d.sourceCutSeq - d.firstSeq + 1;
      this.totals.derivedRecords += d.records.length;
      this.totals.droppedRecords += d.droppedRecords;
      this.totals.rawBytes += d.rawBytes;
      this.totals.derivedBytes += d.derivedBytes;
    }
    return out;
  }
}
