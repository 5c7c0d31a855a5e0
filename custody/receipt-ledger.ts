import { Encoder } from "@msgpack/msgpack";
import type { Clock } from "../core/index.ts";
import { Counters } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { survivesPowerLoss, type EvidenceKind, type ResidencyEvidence } from "./evidence.ts";
import { receiptToTuple, type CustodyReceipt } from "./receipt.ts";
import type { SignedReceiptBatch } from "./receipt-batch.ts";
import { ReceiptError, ReceiptErrorCode } from "./receipt-error.ts";
import { verifyReceiptBatch, type ReceiptVerifyContext } from "./receipt-verification.ts";
import type { PayloadRepresentation } from "./source-cut.ts";

/** Ledger settings. */
export interface ReceiptLedgerOptions {
  /** Time seam: evidence older than `maxEvidenceAgeMs` at `clock.now()` is reported stale. */
  readonly clock: Clock;
  readonly maxEvidenceAgeMs: number;
  /** Rejections are counted here by ReceiptError code (`receipt.rejected.<code>`). */
  readonly counters?: Counters;
}

/** One holder's current, verified statement for one (volume, lane, obligation, residency). */
/** Which holdings `ReceiptLedger.holdings` returns: every field given must match. */
export interface HoldingFilter {
  readonly volume?: string;
  readonly lane?: string;
  readonly holderId?: string;
  readonly obligationId?: string;
}

export interface Holding {
  readonly holderId: string;
  readonly incarnation: number;
  readonly volume: string;
  readonly lane: string;
  readonly obligationId: string;
  readonly representation: PayloadRepresentation;
  readonly residency: EvidenceKind;
  readonly evidence: ResidencyEvidence;
  /** Retained ranges minus everything the control log released for this holder. */
  readonly retained: RangeSet;
  readonly prefix: { readonly base: number; readonly through: number };
  readonly receiptSeq: number;
  readonly issuedAt: number;
  /** The evidence time (`evidence.observedAt`): coverage is known "as of" this instant. */
  readonly evidenceAt: number;
  /** True when the evidence is older than the configured maximum age. */
  readonly stale: boolean;
  readonly survivesPowerLoss: boolean;
  readonly receipt: CustodyReceipt;
}

/** What one accepted batch did. */
export interface LedgerApplyResult {
  /** Receipts that became the current statement for their key. */
  readonly applied: number;
  /** Receipts older than the current statement for their key (ignored: they never resurrect ranges). */
  readonly superseded: number;
  /** Receipts identical to the current statement (duplicates). */
  readonly duplicates: number;
}

/** Coverage query filters. By default only fresh evidence counts. */
export interface CoverageQuery {
  readonly residencies?: readonly EvidenceKind[];
  /** `raw` counts only the original log; a coalesced image never satisfies it. */
  readonly representation?: PayloadRepresentation;
  readonly includeStale?: boolean;
  readonly powerSafeOnly?: boolean;
  readonly obligationId?: string;
}

/** A deterministic, JSON-able picture of the ledger (for tests, status and the simulator). */
export interface LedgerSnapshot {
  readonly holdings: readonly {
    holderId: string;
    incarnation: number;
    volume: string;
    lane: string;
    obligationId: string;
    residency: string;
    representation: string;
    receiptSeq: number;
    retained: [number, number][];
    prefixThrough: number;
    evidenceAt: number;
    stale: boolean;
  }[];
  readonly receiptSeqsSeen: readonly {
    holderId: string;
    incarnation: number;
    volume: string;
    lane: string;
    seqs: [number, number][];
  }[];
  readonly released: readonly {
    holderId: string;
    volume: string;
    lane: string;
    obligationId: string;
    ranges: [number, number][];
  }[];
}

interface Entry {
  receipt: CustodyReceipt;
  fingerprint: Uint8Array;
}

const encoder = new Encoder();
const SEP = "\u0000";

function entryKey(holderId: string, volume: string, lane: string, obligationId: string, residency: string): string {
  return [holderId, volume, lane, obligationId, residency].join(SEP);
}
function releaseKey(holderId: string, volume: string, lane: string, obligationId: string): string {
  return [holderId, volume, lane, obligationId].join(SEP);
}
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

/**
 * What `r` says its holder holds, with `retained` as the ledger believes it (the receipt's ranges
 * minus what was released there since); evidence older than `maxEvidenceAgeMs` at `nowMs` is stale.
 */
export function holdingOf(r: CustodyReceipt, retained: RangeSet, nowMs: number, maxEvidenceAgeMs: number): Holding {
  return {
    holderId: r.holder.holderId,
    incarnation: r.holder.incarnation,
    volume: r.volume,
    lane: r.lane,
    obligationId: r.obligation.obligationId,
    representation: r.payload.representation,
    residency: r.residency.kind,
    evidence: r.residency,
    retained,
    prefix: { base: r.prefix.base, through: retained.contiguousThrough(r.prefix.base) },
    receiptSeq: r.receiptSeq,
    issuedAt: r.issuedAt,
    evidenceAt: r.residency.observedAt,
    stale: nowMs - r.residency.observedAt > maxEvidenceAgeMs,
    survivesPowerLoss: survivesPowerLoss(r.residency),
    receipt: r,
  };
}

/**
 * Merges verified receipts per (holder, volume, lane, obligation, residency) and answers who
 * retains what, at which residency, as of which evidence time.
 *
 * Guarantees: the only input that adds coverage is a verified, signed receipt batch of the
 * holder itself (there is no way to credit a send completion or a relay's say-so); a higher
 * receipt sequence supersedes a lower one, so missing, reordered and duplicated receipts fold to
 * the same state in any order; released ranges are subtracted and never come back; a batch from a
 * newer incarnation drops what older incarnations of that holder claimed; a rejected batch changes
 * nothing (all checks run before any mutation) and is counted by code.
 */
export class ReceiptLedger {
  private readonly entries = new Map<string, Entry>();
  private readonly seen = new Map<
    string,
    { holderId: string; incarnation: number; volume: string; lane: string; seqs: RangeSet }
  >();
  private readonly releasedMap = new Map<string, RangeSet>();
  private readonly incarnations = new Map<string, number>();
  readonly counters: Counters;

  constructor(private readonly opts: ReceiptLedgerOptions) {
    this.counters = opts.counters ?? new Counters();
  }

  /**
   * Verifies `signed` against `ctx` (plus the releases this ledger has noted) and merges it.
   * Throws ReceiptError (any verification code, or `conflicting_receipt` when a receipt reuses a
   * sequence number with different content); the ledger is then unchanged.
   */
  apply(signed: SignedReceiptBatch, ctx: ReceiptVerifyContext): LedgerApplyResult {
    try {
      return this.applyChecked(signed, ctx);
    } catch (err) {
      this.counters.inc(`receipt.rejected.${err instanceof ReceiptError ? err.code : "internal"}`);
      throw err;
    }
  }

  private applyChecked(signed: SignedReceiptBatch, ctx: ReceiptVerifyContext): LedgerApplyResult {
    const merged: ReceiptVerifyContext = {
      stream: ctx.stream,
      holderKey: (h, i) => ctx.holderKey(h, i),
      currentIncarnation: (h) => {
        const a = ctx.currentIncarnation(h);
        const b = this.incarnations.get(h);
        return a === undefined ? b : b === undefined ? a : Math.max(a, b);
      },
      topologyEpoch: ctx.topologyEpoch,
      policyGeneration: ctx.policyGeneration,
      released: (h, v, l, o) => ctx.released(h, v, l, o).union(this.releasedFor(h, v, l, o)),
    };
    const batch = verifyReceiptBatch(signed, merged);
    const { holderId, incarnation } = batch.holder;
    const newerIncarnation = (this.incarnations.get(holderId) ?? -1) < incarnation;

    // Pass 1: decide everything without touching state.
    const plan: { key: string; entry: Entry }[] = [];
    let superseded = 0;
    let duplicates = 0;
    for (const r of batch.receipts) {
      const key = entryKey(holderId, r.volume, r.lane, r.obligation.obligationId, r.residency.kind);
      const fingerprint = encoder.encode(receiptToTuple(r));
      const cur = newerIncarnation ? undefined : this.entries.get(key);
      if (cur !== undefined && cur.receipt.receiptSeq === r.receiptSeq) {
        if (!sameBytes(cur.fingerprint, fingerprint)) {
          throw new ReceiptError(
            ReceiptErrorCode.conflicting_receipt,
            `holder ${holderId} signed two different receipts with sequence ${r.receiptSeq}`,
            { holderId, receiptSeq: r.receiptSeq },
          );
        }
        duplicates++;
      } else if (cur !== undefined && cur.receipt.receiptSeq > r.receiptSeq) superseded++;
      else plan.push({ key, entry: { receipt: r, fingerprint } });
    }

    // Pass 2: commit.
    if (newerIncarnation) {
      for (const [k, e] of this.entries) if (e.receipt.holder.holderId === holderId) this.entries.delete(k);
      for (const [k, s] of this.seen) if (s.holderId === holderId) this.seen.delete(k);
      this.incarnations.set(holderId, incarnation);
    }
    for (const { key, entry } of plan) this.entries.set(key, entry);
    const sk = [holderId, incarnation, batch.stream.volume, batch.stream.lane].join(SEP);
    const s = this.seen.get(sk) ?? {
      holderId,
      incarnation,
      volume: batch.stream.volume,
      lane: batch.stream.lane,
      seqs: RangeSet.EMPTY,
    };
    this.seen.set(sk, {
      ...s,
      seqs: RangeSet.from([...s.seqs.ranges(), ...batch.receipts.map((r) => [r.receiptSeq, r.receiptSeq] as const)]),
    });
    this.counters.inc("receipt.accepted", batch.receipts.length);
    // Replays and reorderings change nothing, but are counted so they can be seen.
    if (superseded > 0) this.counters.inc("receipt.superseded", superseded);
    if (duplicates > 0) this.counters.inc("receipt.duplicate", duplicates);
    return { applied: plan.length, superseded, duplicates };
  }

  /**
   * Records that the control log released `ranges` for this holder/stream/obligation. From now on
   * those ranges are subtracted from its holdings and any receipt claiming them is refused.
   */
  noteReleased(holderId: string, volume: string, lane: string, obligationId: string, ranges: RangeSet): void {
    const k = releaseKey(holderId, volume, lane, obligationId);
    this.releasedMap.set(k, (this.releasedMap.get(k) ?? RangeSet.EMPTY).union(ranges));
  }

  /**
   * The control log admitted `incarnation` of `holderId`: everything an older incarnation claimed is
   * dropped (its RAM is gone; what survived on disk the new incarnation receipts again). Returns
   * the dropped holdings. A receipt of an older incarnation is refused from now on.
   */
  admitIncarnation(holderId: string, incarnation: number): Holding[] {
    const cur = this.incarnations.get(holderId);
    if (cur !== undefined && cur >= incarnation) return [];
    const dropped = this.holdings({ holderId }).filter((h) => h.incarnation < incarnation);
    for (const [k, e] of this.entries)
      if (e.receipt.holder.holderId === holderId && e.receipt.holder.incarnation < incarnation) this.entries.delete(k);
    for (const [k, x] of this.seen) if (x.holderId === holderId && x.incarnation < incarnation) this.seen.delete(k);
    this.incarnations.set(holderId, incarnation);
    return dropped;
  }

  /** Ranges noted as released for this holder/stream/obligation. */
  releasedFor(holderId: string, volume: string, lane: string, obligationId: string): RangeSet {
    return this.releasedMap.get(releaseKey(holderId, volume, lane, obligationId)) ?? RangeSet.EMPTY;
  }

  /** Current holdings, optionally filtered, sorted by holder, volume, lane, obligation, residency. */
  holdings(filter: HoldingFilter = {}): Holding[] {
    const now = this.opts.clock.now();
    const out: Holding[] = [];
    for (const key of [...this.entries.keys()].sort()) {
      const r = this.entries.get(key)!.receipt;
      if (filter.volume !== undefined && r.volume !== filter.volume) continue;
      if (filter.lane !== undefined && r.lane !== filter.lane) continue;
      if (filter.holderId !== undefined && r.holder.holderId !== filter.holderId) continue;
      if (filter.obligationId !== undefined && r.obligation.obligationId !== filter.obligationId) continue;
      const released = this.releasedFor(r.holder.holderId, r.volume, r.lane, r.obligation.obligationId);
      out.push(holdingOf(r, r.retained.subtract(released), now, this.opts.maxEvidenceAgeMs));
    }
    return out;
  }

  /** Holdings that retain sequence `seq` of the stream (fresh and stale; check `stale`). */
  whoRetains(volume: string, lane: string, seq: number): Holding[] {
    return this.holdings({ volume, lane }).filter((h) => h.retained.has(seq));
  }

  /** Union of retained ranges on a stream over holdings that pass `q` (fresh evidence only by default). */
  coverage(volume: string, lane: string, q: CoverageQuery = {}): RangeSet {
    let out = RangeSet.EMPTY;
    for (const h of this.holdings({
      volume,
      lane,
      ...(q.obligationId !== undefined ? { obligationId: q.obligationId } : {}),
    })) {
      if (!q.includeStale && h.stale) continue;
      if (q.residencies !== undefined && !q.residencies.includes(h.residency)) continue;
      if (q.representation !== undefined && h.representation !== q.representation) continue;
      if (q.powerSafeOnly && !h.survivesPowerLoss) continue;
      out = out.union(h.retained);
    }
    return out;
  }

  /**
   * Receipt sequences of the holder's current incarnation on a stream that never arrived (gaps below the highest seen).
   */
  missingReceiptSeqs(holderId: string, volume: string, lane: string): RangeSet {
    const inc = this.incarnations.get(holderId);
    if (inc === undefined) return RangeSet.EMPTY;
    const s = this.seen.get([holderId, inc, volume, lane].join(SEP));
    if (s === undefined || s.seqs.max === undefined) return RangeSet.EMPTY;
    return s.seqs.holes(1, s.seqs.max);
  }

  /** Deterministic picture of the whole ledger. */
  snapshot(): LedgerSnapshot {
    return {
      holdings: this.holdings().map((h) => ({
        holderId: h.holderId,
        incarnation: h.incarnation,
        volume: h.volume,
        lane: h.lane,
        obligationId: h.obligationId,
        residency: h.residency,
        representation: h.representation,
        receiptSeq: h.receiptSeq,
        retained: h.retained.toJSON(),
        prefixThrough: h.prefix.through,
        evidenceAt: h.evidenceAt,
        stale: h.stale,
      })),
      receiptSeqsSeen: [...this.seen.keys()].sort().map((k) => {
        const s = this.seen.get(k)!;
        return {
          holderId: s.holderId,
          incarnation: s.incarnation,
          volume: s.volume,
          lane: s.lane,
          seqs: s.seqs.toJSON(),
        };
      }),
      released: [...this.releasedMap.keys()].sort().map((k) => {
        const [holderId, volume, lane, obligationId] = k.split(SEP) as [string, string, string, string];
        return { holderId, volume, lane, obligationId, ranges: this.releasedMap.get(k)!.toJSON() };
      }),
    };
  }
}
