/**
 * The controller's receipt ledger as plain data (actors/controller/controller-ledger.ts): the same
 * rules as custody's ReceiptLedger, as pure functions. No NATS, no files, no clock.
 */
import test from "ava";
import { admitLedgerIncarnation, applyReceiptBatch, EMPTY_LEDGER, ledgerHoldings } from "../../actors/controller/controller-ledger.ts";
import { ReceiptError } from "../../custody/receipt-error.ts";
import { ReceiptLedger } from "../../custody/receipt-ledger.ts";
import { batchOf, context, manualClock, ram, receipt, signed, T0 } from "../custody/receipt-fixtures.ts";

test("what custody's ReceiptLedger holds, the plain ledger holds too, with the same staleness", (t) => {
  const batches = [
    signed(batchOf([receipt({ seq: 1, ranges: [[1, 10]] })])),
    signed(batchOf([receipt({ seq: 3, ranges: [[1, 30]], residency: ram(T0 + 5) })])),
    signed(batchOf([receipt({ seq: 2, ranges: [[1, 20]] })])),
    signed(batchOf([receipt({ seq: 1, holderId: "h2", ranges: [[4, 9]] })])),
  ];
  const reference = new ReceiptLedger({ clock: manualClock(T0 + 1_000), maxEvidenceAgeMs: 999 });
  let plain = EMPTY_LEDGER;
  for (const b of batches) {
    reference.apply(b, context());
    plain = applyReceiptBatch(plain, b, context()).ledger;
  }
  const view = (hs: ReturnType<typeof ledgerHoldings>) => hs.map((h) => [h.holderId, h.receiptSeq, h.retained.toJSON(), h.prefix.through, h.stale]);
  t.deepEqual(view(ledgerHoldings(plain, {}, T0 + 1_000, 999)), view(reference.holdings()));
  t.deepEqual(view(ledgerHoldings(plain, {}, T0 + 1_000, 999)), [
    ["h1", 3, [[1, 30]], 30, false],
    ["h2", 1, [[4, 9]], 0, true],
  ]);
  t.deepEqual(view(ledgerHoldings(plain, { holderId: "h2" }, T0, 999)), [["h2", 1, [[4, 9]], 0, false]]);
});

test("a conflicting receipt throws and returns no ledger; admitting a newer incarnation drops the older one's claims", (t) => {
  const first = Object.freeze(applyReceiptBatch(EMPTY_LEDGER, signed(batchOf([receipt({ seq: 1, ranges: [[1, 10]] })])), context()).ledger);
  t.throws(() => applyReceiptBatch(first, signed(batchOf([receipt({ seq: 1, ranges: [[1, 11]] })])), context()), { instanceOf: ReceiptError, message: /two different receipts/ });
  t.is(ledgerHoldings(first, {}, T0, 1e9).length, 1, "unchanged");
  t.is(admitLedgerIncarnation(first, "h1", 1), first, "the same incarnation again changes nothing");
  const next = admitLedgerIncarnation(first, "h1", 2);
  t.deepEqual(ledgerHoldings(next, {}, T0, 1e9), []);
  t.deepEqual(next.incarnations, { h1: 2 });
  t.throws(() => applyReceiptBatch(next, signed(batchOf([receipt({ seq: 2 })])), context()), { instanceOf: ReceiptError, message: /incarnation/ });
});
