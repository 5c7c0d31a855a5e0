import { Encoder } from "@msgpack/msgpack";
import { RangeSet } from "../../lanes/index.ts";
import {
  holdingOf,
  receiptToTuple,
  ReceiptError,
  ReceiptErrorCode,
  survivesPowerLoss,
  verifyReceiptBatch,
  type CustodyReceipt,
  type Holding,
  type HoldingFilter,
  type ReceiptVerifyContext,
  type SignedReceiptBatch,
} from "../../custody/index.ts";

/**
 * The controller's receipt ledger as plain data (it lives in the machine's context): the same
 * rules as custody's ReceiptLedger — only a verified signed batch adds coverage, a higher receipt
 * sequence supersedes a lower one, a newer incarnation drops what older ones claimed, a refused
 * batch changes nothing — as pure functions returning a new ledger. Retained ranges are kept in
 * their serialisable form (pairs), so no class instance sits in the context.
 */

/** Inclusive sequence ranges in RangeSet's JSON form. */
export type RangePairs = readonly (readonly [number, number])[];

/** A verified receipt with its retained ranges as pairs. */
export type PlainReceipt = Omit<CustodyReceipt, "retained"> & { readonly retained: RangePairs };

/** The current statement for one (holder, volume, lane, obligation, residency). */
export interface LedgerEntry {
  readonly receipt: PlainReceipt;
  /** Its canonical encoding: the same sequence with other content is a conflicting receipt. */
  readonly fingerprint: Uint8Array;
}

export interface PlainLedger {
  readonly entries: Readonly<Record<string, LedgerEntry>>;
  /** The newest incarnation per holder this ledger knows (admitted, or receipted by a verified batch). */
  readonly incarnations: Readonly<Record<string, number>>;
}

export const EMPTY_LEDGER: PlainLedger = { entries: {}, incarnations: {} };

/** What one accepted batch did. */
export interface LedgerApplied {
  readonly ledger: PlainLedger;
  readonly accepted: number;
  readonly superseded: number;
  readonly duplicates: number;
}

const encoder = new Encoder();
const SEP = "\u0000";

const entryKey = (holderId: string, volume: string, lane: string, obligationId: string, residency: string): string =>
  [holderId, volume, lane, obligationId, residency].join(SEP);

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;

const plain = (r: CustodyReceipt): PlainReceipt => ({ ...r, retained: r.retained.toJSON() });

/**
 * Verifies `signed` against `ctx` (incarnations this ledger knows count too) and returns the
 * merged ledger. Throws ReceiptError (any verification code, or `conflicting_receipt` when a
 * receipt reuses a sequence with other content); `ledger` itself is never changed.
 */
export function applyReceiptBatch(
  ledger: PlainLedger,
  signed: SignedReceiptBatch,
  ctx: ReceiptVerifyContext,
): LedgerApplied {
  const batch = verifyReceiptBatch(signed, {
    ...ctx,
    currentIncarnation: (h) => {
      const a = ctx.currentIncarnation(h);
      const b = ledger.incarnations[h];
      return a === undefined ? b : b === undefined ? a : Math.max(a, b);
    },
  });
  const { holderId, incarnation } = batch.holder;
  const newer = (ledger.incarnations[holderId] ?? -1) < incarnation;
  const entries: Record<string, LedgerEntry> = newer ? withoutHolder(ledger.entries, holderId) : { ...ledger.entries };
  let superseded = 0;
  let duplicates = 0;
  for (const r of batch.receipts) {
    const key = entryKey(holderId, r.volume, r.lane, r.obligation.obligationId, r.residency.kind);
    const fingerprint = encoder.encode(receiptToTuple(r));
    const cur = entries[key];
    if (cur !== undefined && cur.receipt.receiptSeq === r.receiptSeq) {
      if (!sameBytes(cur.fingerprint, fingerprint))
        throw new ReceiptError(
          ReceiptErrorCode.conflicting_receipt,
          `holder ${holderId} signed two different receipts with sequence ${r.receiptSeq}`,
          { holderId, receiptSeq: r.receiptSeq },
        );
      duplicates++;
    } else if (cur !== undefined && cur.receipt.receiptSeq > r.receiptSeq) superseded++;
    else entries[key] = { receipt: plain(r), fingerprint };
  }
  const incarnations = newer ? { ...ledger.incarnations, [holderId]: incarnation } : ledger.incarnations;
  return { ledger: { entries, incarnations }, accepted: batch.receipts.length, superseded, duplicates };
}

function withoutHolder(
  entries: Readonly<Record<string, LedgerEntry>>,
  holderId: string,
  below = Infinity,
): Record<string, LedgerEntry> {
  const out: Record<string, LedgerEntry> = {};
  for (const [k, e] of Object.entries(entries))
    if (e.receipt.holder.holderId !== holderId || e.receipt.holder.incarnation >= below) out[k] = e;
  return out;
}

/**
 * The control log admitted `incarnation` of `holderId`: what older incarnations claimed is dropped
 * (their RAM is gone) and their receipts are refused from now on. Unchanged (the same object)
 * when the ledger already knows that incarnation or a newer one.
 */
export function admitLedgerIncarnation(ledger: PlainLedger, holderId: string, incarnation: number): PlainLedger {
  const cur = ledger.incarnations[holderId];
  if (cur !== undefined && cur >= incarnation) return ledger;
  return {
    entries: withoutHolder(ledger.entries, holderId, incarnation),
    incarnations: { ...ledger.incarnations, [holderId]: incarnation },
  };
}

/**
 * Current holdings, filtered, sorted by holder, volume, lane, obligation, residency; evidence older
 * than `maxEvidenceAgeMs` at `nowMs` is marked stale.
 */
export function ledgerHoldings(
  ledger: PlainLedger,
  filter: HoldingFilter,
  nowMs: number,
  maxEvidenceAgeMs: number,
): Holding[] {
  const out: Holding[] = [];
  for (const key of Object.keys(ledger.entries).sort()) {
    const p = ledger.entries[key]!.receipt;
    if (filter.volume !== undefined && p.volume !== filter.volume) continue;
    if (filter.lane !== undefined && p.lane !== filter.lane) continue;
    if (filter.holderId !== undefined && p.holder.holderId !== filter.holderId) continue;
    if (filter.obligationId !== undefined && p.obligation.obligationId !== filter.obligationId) continue;
    const retained = RangeSet.fromJSON(p.retained);
    out.push(holdingOf({ ...p, retained }, retained, nowMs, maxEvidenceAgeMs));
  }
  return out;
}
