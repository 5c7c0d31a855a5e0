import test from "ava";
import fc from "fast-check";
import { RangeSet } from "../../lanes/range-set.ts";
import type { CustodyReceipt } from "../../custody/receipt.ts";
import { ReceiptError } from "../../custody/receipt-error.ts";
import { ReceiptLedger } from "../../custody/receipt-ledger.ts";
import type { SignedReceiptBatch } from "../../custody/receipt-batch.ts";
import { batchOf, context, disk, manualClock, ram, receipt, signed, T0 } from "./receipt-fixtures.ts";

const newLedger = (clock = manualClock()) => new ReceiptLedger({ clock, maxEvidenceAgeMs: 30_000 });

test("a later receipt sequence supersedes an earlier one for the same holder, obligation and residency", (t) => {
  const l = newLedger();
  l.apply(signed(batchOf([receipt({ seq: 1, ranges: [[1, 10]] })])), context());
  l.apply(signed(batchOf([receipt({ seq: 2, ranges: [[6, 20]] })])), context());
  t.deepEqual(l.coverage("vol1", "l0").toJSON(), [[6, 20]]);
  t.is(l.holdings()[0]!.receiptSeq, 2);
});

test("an older receipt arriving late never resurrects ranges the holder has since dropped", (t) => {
  const l = newLedger();
  l.apply(signed(batchOf([receipt({ seq: 5, ranges: [[50, 60]] })])), context());
  const r = l.apply(signed(batchOf([receipt({ seq: 4, ranges: [[1, 60]] })])), context());
  t.deepEqual(r, { applied: 0, superseded: 1, duplicates: 0 });
  t.deepEqual(l.coverage("vol1", "l0").toJSON(), [[50, 60]]);
});

test("a duplicated batch is recognised as a duplicate and changes nothing", (t) => {
  const l = newLedger();
  const b = signed(batchOf([receipt({ seq: 1 }), receipt({ seq: 2, residency: disk(), ranges: [[1, 3]] })]));
  l.apply(b, context());
  const before = JSON.stringify(l.snapshot());
  t.deepEqual(l.apply(b, context()), { applied: 0, superseded: 0, duplicates: 2 });
  t.is(JSON.stringify(l.snapshot()), before);
});

test("missing receipt sequences are reported as gaps below the highest seen", (t) => {
  const l = newLedger();
  l.apply(signed(batchOf([receipt({ seq: 1 }), receipt({ seq: 4, ranges: [[1, 12]] })])), context());
  l.apply(signed(batchOf([receipt({ seq: 7, ranges: [[1, 14]] })])), context());
  t.deepEqual(l.missingReceiptSeqs("h1", "vol1", "l0").toJSON(), [[2, 3], [5, 6]]);
});

test("evidence older than the configured age is marked stale and stops counting as coverage", (t) => {
  const clock = manualClock();
  const l = newLedger(clock);
  l.apply(signed(batchOf([receipt({ seq: 1, residency: ram(T0), ranges: [[1, 8]] })])), context());
  t.false(l.holdings()[0]!.stale);
  clock.advance(30_001);
  const h = l.holdings()[0]!;
  t.true(h.stale);
  t.is(h.evidenceAt, T0, "the answer says as of which evidence time");
  t.true(l.coverage("vol1", "l0").isEmpty);
  t.deepEqual(l.coverage("vol1", "l0", { includeStale: true }).toJSON(), [[1, 8]]);
});

test("a new holder incarnation drops what the previous incarnation claimed (its RAM is gone)", (t) => {
  const l = newLedger();
  l.apply(signed(batchOf([receipt({ seq: 9, ranges: [[1, 100]] })])), context());
  l.apply(signed(batchOf([receipt({ seq: 1, incarnation: 2, ranges: [[90, 100]] })])), context({ incarnations: { h1: 2, h2: 1 } }));
  t.deepEqual(l.coverage("vol1", "l0").toJSON(), [[90, 100]]);
  const err = t.throws(() => l.apply(signed(batchOf([receipt({ seq: 10, ranges: [[1, 100]] })])), context()), { instanceOf: ReceiptError });
  t.is(err?.code, "stale_incarnation", "the ledger remembers the newer incarnation even if the context lags");
});

test("released ranges are subtracted at once and a later claim on them is a range regression", (t) => {
  const l = newLedger();
  l.apply(signed(batchOf([receipt({ seq: 1, ranges: [[1, 20]] })])), context());
  l.noteReleased("h1", "vol1", "l0", "ob1", RangeSet.of(1, 10));
  t.deepEqual(l.coverage("vol1", "l0").toJSON(), [[11, 20]]);
  t.deepEqual(l.holdings()[0]!.prefix, { base: 1, through: 0 }, "the prefix from 1 is empty once 1..10 are released");
  const err = t.throws(() => l.apply(signed(batchOf([receipt({ seq: 2, ranges: [[5, 30]] })])), context()), { instanceOf: ReceiptError });
  t.is(err?.code, "range_regression");
  t.deepEqual(l.coverage("vol1", "l0").toJSON(), [[11, 20]]);
});

test("a relay's receipt credits only the relay: forwarding to a downstream holder is not that holder's custody", (t) => {
  const l = newLedger();
  // The relay forwarded 1..10 to h2 and signs what it itself retains; h2 has said nothing yet.
  l.apply(signed(batchOf([receipt({ seq: 1, holderId: "relay", ranges: [[1, 10]] })])), context());
  t.deepEqual(l.holdings({ holderId: "h2" }), []);
  t.deepEqual(l.whoRetains("vol1", "l0", 5).map((h) => h.holderId), ["relay"]);
});

test("who retains a sequence lists each holder with its residency and evidence time", (t) => {
  const l = newLedger();
  l.apply(signed(batchOf([receipt({ seq: 1, ranges: [[1, 10]] }), receipt({ seq: 2, residency: disk(T0 - 5), ranges: [[1, 5]] })])), context());
  l.apply(signed(batchOf([receipt({ seq: 1, holderId: "h2", ranges: [[4, 10]] })])), context());
  const rows = l.whoRetains("vol1", "l0", 4).map((h) => [h.holderId, h.residency, h.evidenceAt]);
  t.deepEqual(rows, [["h1", "disk", T0 - 5], ["h1", "ram", T0], ["h2", "ram", T0]]);
});

// ---- property: order, loss-free duplication and batching do not matter ----

interface Script {
  receipts: CustodyReceipt[];
}

const rangesArb = fc.array(fc.tuple(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 20 })), { maxLength: 4 }).map((xs) => xs.map(([a, n]) => [a, a + n] as [number, number]));

/** An honest history: per holder, strictly increasing receipt sequences over a few (obligation, residency) keys. */
const scriptArb: fc.Arbitrary<Script> = fc
  .array(fc.record({ holder: fc.constantFrom("h1", "h2"), ob: fc.constantFrom("ob1", "ob2"), onDisk: fc.boolean(), ranges: rangesArb, gap: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 14 })
  .map((steps) => {
    const next: Record<string, number> = { h1: 0, h2: 0 };
    return {
      receipts: steps.map((s) => {
        next[s.holder] = next[s.holder]! + s.gap;
        return receipt({
          seq: next[s.holder]!,
          holderId: s.holder,
          ranges: s.ranges,
          residency: s.onDisk ? disk() : ram(),
          obligation: { obligationId: s.ob, releaseAuthority: { kind: "control_log", region: "us-east" } },
        });
      }),
    };
  });

/** Groups a delivery order into batches: consecutive runs, split per holder, deduplicated and sorted by seq. */
function toBatches(order: CustodyReceipt[], cuts: number[]): SignedReceiptBatch[] {
  const out: SignedReceiptBatch[] = [];
  let i = 0;
  for (const size of [...cuts, order.length]) {
    const chunk = order.slice(i, i + Math.max(1, size));
    i += chunk.length;
    for (const h of ["h1", "h2"]) {
      const mine = [...new Map(chunk.filter((r) => r.holder.holderId === h).map((r) => [r.receiptSeq, r])).values()].sort((a, b) => a.receiptSeq - b.receiptSeq);
      if (mine.length > 0) out.push(signed(batchOf(mine)));
    }
    if (i >= order.length) break;
  }
  return out;
}

function fold(batches: SignedReceiptBatch[]): string {
  const l = newLedger();
  for (const b of batches) l.apply(b, context());
  return JSON.stringify(l.snapshot());
}

test("any permutation and duplication of a receipt sequence folds to the same ledger state as the ordered sequence", (t) => {
  fc.assert(
    fc.property(
      scriptArb.chain((s) =>
        fc.record({
          script: fc.constant(s),
          dupes: fc.array(fc.integer({ min: 0, max: s.receipts.length - 1 }), { maxLength: 6 }),
          seed: fc.array(fc.integer(), { minLength: s.receipts.length + 6, maxLength: s.receipts.length + 6 }),
          cuts: fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 8 }),
        }),
      ),
      ({ script, dupes, seed, cuts }) => {
        const ordered = fold(script.receipts.map((r) => signed(batchOf([r]))));
        const delivered = [...script.receipts, ...dupes.map((i) => script.receipts[i]!)];
        const shuffled = delivered.map((r, i) => ({ r, k: seed[i]! })).sort((a, b) => a.k - b.k).map((x) => x.r);
        return fold(toBatches(shuffled, cuts)) === ordered;
      },
    ),
    { numRuns: 150 },
  );
  t.pass();
});
