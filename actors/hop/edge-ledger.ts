import { RangeSet } from "../../lanes/index.ts";
import { EdgeReceiptError, EdgeReceiptErrorCode, type EdgeReceipt } from "./lane-obligations.ts";

/**
 * The per-edge half of `LaneObligations` as plain, immutable data with pure functions, for actors
 * whose state lives in a machine context (the volume writer toward its first hops). Same rules:
 * a receipt from a newer incarnation starts that edge over, older incarnations and epochs are
 * refused, and a release frontier at an edge covers what it released even without a receipt.
 * Every function returns new objects and never changes its input.
 */

/** What one edge (receiver) needs nothing more of, and of which incarnation. */
export interface EdgeMark {
  readonly incarnation: number | undefined;
  readonly lastReceiptSeq: number;
  readonly receipted: RangeSet;
  /** Released there by the control log (any incarnation: a frontier belongs to the holder). */
  readonly releasedThere: RangeSet;
  /** receipted ∪ releasedThere. */
  readonly covered: RangeSet;
}

/** The edges of one lane and the epoch below which their receipts are stale. */
export interface EdgeLedger {
  readonly minEpoch: number;
  readonly edges: Readonly<Record<string, EdgeMark>>;
}

const FRESH: EdgeMark = {
  incarnation: undefined,
  lastReceiptSeq: -1,
  receipted: RangeSet.EMPTY,
  releasedThere: RangeSet.EMPTY,
  covered: RangeSet.EMPTY,
};

function withCovered(m: Omit<EdgeMark, "covered">): EdgeMark {
  return { ...m, covered: m.releasedThere.isEmpty ? m.receipted : m.receipted.union(m.releasedThere) };
}

/** A ledger of `edges`, none heard from. */
export function openEdgeLedger(edges: readonly string[], epoch = 0): EdgeLedger {
  return { minEpoch: epoch, edges: Object.fromEntries(edges.map((e) => [e, FRESH])) };
}

/** Sequences `edge` needs nothing more of (receipted by its current incarnation, or released there). */
export function edgeCovered(ledger: EdgeLedger, edge: string): RangeSet {
  return ledger.edges[edge]?.covered ?? RangeSet.EMPTY;
}

/** Of `retained`, what `edge` has not covered yet (empty for a holder that is not an edge). */
export function edgePending(ledger: EdgeLedger, retained: RangeSet, edge: string): RangeSet {
  const m = ledger.edges[edge];
  return m === undefined ? RangeSet.EMPTY : retained.subtract(m.covered);
}

/** Of `retained`, what every edge has covered. */
export function coveredByAllEdges(ledger: EdgeLedger, retained: RangeSet): RangeSet {
  let r = retained;
  for (const m of Object.values(ledger.edges)) r = r.intersect(m.covered);
  return r;
}

/**
 * Applies a verified receipt (as `LaneObligations.applyEdgeReceipt`): throws EdgeReceiptError for
 * a holder that is not an edge, a stale epoch or an older incarnation. `restarted`: the receipt
 * revealed a newer incarnation than the one known.
 */
export function ledgerApplyReceipt(ledger: EdgeLedger, r: EdgeReceipt): { ledger: EdgeLedger; restarted: boolean } {
  const e = ledger.edges[r.holder];
  if (e === undefined)
    throw new EdgeReceiptError(EdgeReceiptErrorCode.NotAnEdge, `${r.holder} is not a downstream edge of this lane`, {
      holder: r.holder,
    });
  if (r.epoch < ledger.minEpoch)
    throw new EdgeReceiptError(
      EdgeReceiptErrorCode.StaleEpoch,
      `receipt from ${r.holder} is from epoch ${r.epoch} < ${ledger.minEpoch}`,
      { holder: r.holder, epoch: r.epoch },
    );
  if (e.incarnation !== undefined && r.incarnation < e.incarnation)
    throw new EdgeReceiptError(
      EdgeReceiptErrorCode.StaleIncarnation,
      `receipt from ${r.holder} incarnation ${r.incarnation} < ${e.incarnation}`,
      { holder: r.holder, incarnation: r.incarnation, current: e.incarnation },
    );
  const newer = e.incarnation === undefined || r.incarnation > e.incarnation;
  const base = newer ? { ...e, incarnation: r.incarnation, lastReceiptSeq: -1, receipted: RangeSet.EMPTY } : e;
  const mark = withCovered({
    ...base,
    lastReceiptSeq: Math.max(base.lastReceiptSeq, r.receiptSeq),
    receipted: base.receipted.union(r.retained),
  });
  return {
    ledger: { ...ledger, edges: { ...ledger.edges, [r.holder]: mark } },
    restarted: newer && e.incarnation !== undefined,
  };
}

/** The edge restarted as `incarnation`: nothing it receipted counts any more. Older or equal: unchanged. */
export function ledgerRestartEdge(ledger: EdgeLedger, edge: string, incarnation: number): EdgeLedger {
  const e = ledger.edges[edge];
  if (e === undefined || (e.incarnation !== undefined && incarnation <= e.incarnation)) return ledger;
  const mark = withCovered({ ...e, incarnation, lastReceiptSeq: -1, receipted: RangeSet.EMPTY });
  return { ...ledger, edges: { ...ledger.edges, [edge]: mark } };
}

/** The control log released `ranges` at `edge`; undefined when that covers nothing new (or it is no edge). */
export function ledgerReleasedAtEdge(ledger: EdgeLedger, edge: string, ranges: RangeSet): EdgeLedger | undefined {
  const e = ledger.edges[edge];
  if (e === undefined || e.releasedThere.coversAll(ranges)) return undefined;
  const mark = withCovered({ ...e, releasedThere: e.releasedThere.union(ranges) });
  return { ...ledger, edges: { ...ledger.edges, [edge]: mark } };
}
