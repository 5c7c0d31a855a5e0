import test from "ava";
import fc from "fast-check";
import type { ResidencyEvidence } from "../../custody/evidence.ts";
import { ReceiptError } from "../../custody/receipt-error.ts";
import { ReceiptLedger } from "../../custody/receipt-ledger.ts";
import { verifyReceiptBatch } from "../../custody/receipt-verification.ts";
import type { SignedReceiptBatch } from "../../custody/receipt-batch.ts";
import { batchOf, context, crafted, disk, keys, manualClock, protectedRam, receipt, signed, T0 } from "./receipt-fixtures.ts";

// Issue #19: the older signature tests all used ram evidence, so a verifier that skipped the
// signature whenever every receipt claimed durable (disk or protected_ram) evidence passed them.
// Durable claims are the ones that let a writer count protection and a controller release copies,
// so they must be the most carefully checked, never the least.

const durableKinds: [string, () => ResidencyEvidence[]][] = [
  ["disk", () => [disk(), disk()]],
  ["protected_ram", () => [protectedRam(), protectedRam()]],
  ["mixed disk and protected_ram", () => [disk(), protectedRam()]],
];

function durableBatch(evidence: ResidencyEvidence[]) {
  return batchOf(evidence.map((residency, i) => receipt({ seq: i + 2, residency, ranges: [[1, 20 + i]] })));
}

function assertBadSignature(t: import("ava").ExecutionContext, bad: SignedReceiptBatch): void {
  const ledger = new ReceiptLedger({ clock: manualClock(), maxEvidenceAgeMs: 60_000 });
  ledger.apply(signed(batchOf([receipt({ seq: 1, residency: disk(), ranges: [[1, 5]] })])), context());
  const before = JSON.stringify(ledger.snapshot());
  const err = t.throws(() => ledger.apply(bad, context()), { instanceOf: ReceiptError });
  t.is(err?.code, "bad_signature");
  t.is(JSON.stringify(ledger.snapshot()), before, "the ledger is unchanged");
  t.is(ledger.counters.get("receipt.rejected.bad_signature"), 1, "the rejection is counted");
  t.deepEqual(ledger.coverage("vol1", "l0", { powerSafeOnly: true }).toJSON(), [[1, 5]], "no power-safe coverage was gained");
}

for (const [name, evidence] of durableKinds) {
  test(`a correctly signed batch of only ${name} receipts verifies`, (t) => {
    const v = verifyReceiptBatch(signed(durableBatch(evidence())), context());
    t.is(v.receipts.length, 2);
  });

  test(`a flipped signature byte on a batch of only ${name} receipts is a bad signature`, (t) => {
    const s = signed(durableBatch(evidence()));
    const sig = Uint8Array.from(s.signature);
    sig[17] = sig[17]! ^ 0x01;
    assertBadSignature(t, { body: s.body, signature: sig });
  });

  test(`a batch of only ${name} receipts signed with another holder's key is a bad signature`, (t) => {
    assertBadSignature(t, signed(durableBatch(evidence()), keys.h2!.privateKey));
  });

  test(`a batch of only ${name} receipts edited after signing is a bad signature`, (t) => {
    const original = signed(durableBatch(evidence()));
    const edited = crafted(durableBatch(evidence()), (raw) => (raw[7] = T0 + 1));
    assertBadSignature(t, { body: edited.body, signature: original.signature });
  });
}

test("a zeroed signature never passes for any mix of durable evidence", (t) => {
  const kindArb = fc.constantFrom<() => ResidencyEvidence>(disk, protectedRam);
  fc.assert(
    fc.property(fc.array(kindArb, { minLength: 1, maxLength: 6 }), (kinds) => {
      const s = signed(durableBatch(kinds.map((k) => k())));
      try {
        verifyReceiptBatch({ body: s.body, signature: new Uint8Array(64) }, context());
        return false;
      } catch (err) {
        return err instanceof ReceiptError && err.code === "bad_signature";
      }
    }),
    { numRuns: 50 },
  );
  t.pass();
});
