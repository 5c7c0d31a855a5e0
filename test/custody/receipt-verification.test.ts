import test from "ava";
import fc from "fast-check";
import { RangeSet } from "../../lanes/range-set.ts";
import { decodeReceiptBatch, encodeReceiptBatch, receiptStream } from "../../custody/receipt-batch.ts";
import { ReceiptError, type ReceiptErrorCode } from "../../custody/receipt-error.ts";
import { ReceiptLedger } from "../../custody/receipt-ledger.ts";
import { verifyReceiptBatch } from "../../custody/receipt-verification.ts";
import { survivesPowerLoss } from "../../custody/evidence.ts";
import { batchOf, context, crafted, disk, keys, manualClock, ram, receipt, signed, STREAM, T0 } from "./receipt-fixtures.ts";

/** A ledger that already holds one accepted batch, so "unchanged" is a non-trivial claim. */
function seededLedger() {
  const ledger = new ReceiptLedger({ clock: manualClock(), maxEvidenceAgeMs: 60_000 });
  ledger.apply(signed(batchOf([receipt({ seq: 1, ranges: [[1, 5]] })])), context());
  return ledger;
}

function assertRejected(t: import("ava").ExecutionContext, code: ReceiptErrorCode, run: (ledger: ReceiptLedger) => void): void {
  const ledger = seededLedger();
  const before = JSON.stringify(ledger.snapshot());
  const err = t.throws(() => run(ledger), { instanceOf: ReceiptError });
  t.is(err?.code, code);
  t.is(JSON.stringify(ledger.snapshot()), before, "the ledger is unchanged");
  t.is(ledger.counters.get(`receipt.rejected.${code}`), 1, "the rejection is counted by code");
}

test("a well-formed signed batch verifies and decodes to the receipts that were signed", (t) => {
  const b = batchOf([receipt({ seq: 1, ranges: [[1, 4], [6, 9]] }), receipt({ seq: 2, residency: disk(), ranges: [[1, 3]] })]);
  const v = verifyReceiptBatch(signed(b), context());
  t.is(v.receipts.length, 2);
  t.deepEqual(v.receipts[0]!.retained.toJSON(), [[1, 4], [6, 9]]);
  t.deepEqual(v.receipts[0]!.prefix, { base: 1, through: 4 }, "the contiguous prefix stops at the hole, not at the high-water mark");
  t.is(v.receipts[1]!.residency.kind, "disk");
  t.deepEqual(encodeReceiptBatch(v), encodeReceiptBatch(b), "decode then encode reproduces the signed bytes");
});

test("the canonical encoding is deterministic: equal batches give equal bytes", (t) => {
  const a = encodeReceiptBatch(batchOf([receipt({ seq: 3 })]));
  const b = encodeReceiptBatch(batchOf([receipt({ seq: 3 })]));
  t.deepEqual(a, b);
  t.notDeepEqual(a, encodeReceiptBatch(batchOf([receipt({ seq: 4 })])));
});

test("bytes that are not msgpack are malformed and leave the ledger unchanged", (t) => {
  assertRejected(t, "malformed", (l) => l.apply({ body: Uint8Array.from([0xc1, 1, 2]), signature: new Uint8Array(64) }, context()));
});

test("a receipt whose stated prefix disagrees with its ranges is malformed", (t) => {
  assertRejected(t, "malformed", (l) =>
    l.apply(crafted(batchOf([receipt({ seq: 2 })]), (raw) => ((raw[8] as unknown[][])[0]![8] = 99)), context()),
  );
});

test("a batch of an unknown version is unsupported, not guessed at", (t) => {
  assertRejected(t, "unsupported_version", (l) => l.apply(crafted(batchOf([receipt({ seq: 2 })]), (raw) => (raw[1] = 2)), context()));
});

test("a flipped signature byte is a bad signature and leaves the ledger unchanged", (t) => {
  const s = signed(batchOf([receipt({ seq: 2 })]));
  const sig = Uint8Array.from(s.signature);
  sig[0] = sig[0]! ^ 0xff;
  assertRejected(t, "bad_signature", (l) => l.apply({ body: s.body, signature: sig }, context()));
});

test("a batch naming h1 but signed with another holder's key is a bad signature", (t) => {
  assertRejected(t, "bad_signature", (l) => l.apply(signed(batchOf([receipt({ seq: 2 })]), keys.h2!.privateKey), context()));
});

test("a batch bound to another lane is refused as wrong stream", (t) => {
  assertRejected(t, "wrong_stream", (l) => l.apply(signed(batchOf([receipt({ seq: 2 })])), context({ stream: receiptStream("vol1", "l1") })));
});

test("a batch whose signed subject differs from the subject it arrived on is wrong stream", (t) => {
  assertRejected(t, "wrong_stream", (l) => l.apply(crafted(batchOf([receipt({ seq: 2 })]), (raw) => (raw[4] = "custody.v1.receipt.vol1.other")), context()));
});

test("a batch from a holder that was never admitted has an unknown holder key", (t) => {
  assertRejected(t, "unknown_holder_key", (l) => l.apply(signed(batchOf([receipt({ seq: 2 })])), context({ incarnations: { h2: 1 } })));
});

test("a batch from an incarnation newer than the admitted one is unadmitted until the control log admits it", (t) => {
  assertRejected(t, "unadmitted_incarnation", (l) => l.apply(signed(batchOf([receipt({ seq: 1, incarnation: 2 })])), context()));
});

test("a stale-incarnation batch is rejected and the ledger is unchanged", (t) => {
  assertRejected(t, "stale_incarnation", (l) => l.apply(signed(batchOf([receipt({ seq: 9 })])), context({ incarnations: { h1: 2 } })));
});

test("a receipt issued under an older topology epoch is stale", (t) => {
  assertRejected(t, "stale_epoch", (l) => l.apply(signed(batchOf([receipt({ seq: 2, topologyEpoch: 1 })])), context({ epoch: 2 })));
});

test("a receipt issued under an older policy generation is stale", (t) => {
  assertRejected(t, "stale_generation", (l) => l.apply(signed(batchOf([receipt({ seq: 2, policyGeneration: 1 })])), context({ generation: 3 })));
});

test("a receipt from an epoch the verifier has not committed is refused until it catches up", (t) => {
  assertRejected(t, "ahead_of_verifier", (l) => l.apply(signed(batchOf([receipt({ seq: 2, topologyEpoch: 2 })])), context()));
});

test("unknown residency evidence is unsupported, never downgraded to ram", (t) => {
  const craftedBatch = crafted(batchOf([receipt({ seq: 2 })]), (raw) => {
    const ev = (raw[8] as unknown[][])[0]![10] as unknown[];
    ev[0] = "nvram_v2"; // a kind a newer peer might send
  });
  t.is(decodeReceiptBatch(craftedBatch.body).receipts[0]!.residency.kind, "unrecognized");
  assertRejected(t, "unsupported_evidence", (l) => l.apply(craftedBatch, context()));
});

test("an unknown required extension is unsupported evidence", (t) => {
  const r = receipt({ seq: 2, extensions: [{ kind: "witness-quorum", required: true, body: new Uint8Array([1]) }] });
  assertRejected(t, "unsupported_evidence", (l) => l.apply(signed(batchOf([r])), context()));
});

test("an unknown optional extension is ignored and the receipt is accepted", (t) => {
  const ledger = seededLedger();
  const r = receipt({ seq: 2, extensions: [{ kind: "hint", required: false, body: new Uint8Array([1]) }] });
  t.is(ledger.apply(signed(batchOf([r])), context()).applied, 1);
});

test("a receipt claiming a range the control log already released is a range regression", (t) => {
  assertRejected(t, "range_regression", (l) =>
    l.apply(signed(batchOf([receipt({ seq: 2, ranges: [[1, 10]] })])), context({ released: { "h1/ob1": RangeSet.of(3, 4) } })),
  );
});

test("a holder that signs two different receipts with one sequence number is refused", (t) => {
  assertRejected(t, "conflicting_receipt", (l) => l.apply(signed(batchOf([receipt({ seq: 1, ranges: [[1, 6]] })])), context()));
});

test("a rejected batch changes nothing even when its first receipts were valid", (t) => {
  assertRejected(t, "stale_epoch", (l) =>
    l.apply(signed(batchOf([receipt({ seq: 2, topologyEpoch: 2, ranges: [[1, 50]] }), receipt({ seq: 3, topologyEpoch: 1 })])), context({ epoch: 2 })),
  );
});

test("a volatile ram receipt never reads as power-safe; a synced disk receipt does", (t) => {
  const ledger = new ReceiptLedger({ clock: manualClock(), maxEvidenceAgeMs: 60_000 });
  ledger.apply(signed(batchOf([receipt({ seq: 1, ranges: [[1, 10]] }), receipt({ seq: 2, residency: disk(), ranges: [[1, 4]] })])), context());
  t.deepEqual(ledger.coverage("vol1", "l0").toJSON(), [[1, 10]]);
  t.deepEqual(ledger.coverage("vol1", "l0", { powerSafeOnly: true }).toJSON(), [[1, 4]]);
  t.false(survivesPowerLoss({ kind: "ram", capabilityGeneration: 1, observedAt: T0 }));
});

test("protected ram without a hold-up time is not power-safe", (t) => {
  const base = { kind: "protected_ram" as const, capabilityGeneration: 1, observedAt: T0, protectedCapacityBytes: 1 << 30, batteryHealthPct: 90, preservationPath: "nvdimm-save", recoversMetadata: true, dependencies: ["psu-a"] };
  t.true(survivesPowerLoss({ ...base, holdUpMs: 5000 }));
  t.false(survivesPowerLoss({ ...base, holdUpMs: 0 }));
  t.false(survivesPowerLoss({ ...base, holdUpMs: 5000, recoversMetadata: false }));
});

test("protected ram evidence round-trips through a signed batch with every bound field", (t) => {
  const ev = { kind: "protected_ram" as const, capabilityGeneration: 4, observedAt: T0, protectedCapacityBytes: 1 << 30, holdUpMs: 5000, batteryHealthPct: 97, preservationPath: "nvdimm-save", recoversMetadata: true, dependencies: ["psu-a", "ctrl-1"] };
  const v = verifyReceiptBatch(signed(batchOf([receipt({ seq: 1, residency: ev })])), context());
  t.deepEqual(v.receipts[0]!.residency, ev);
});

test("a coalesced cut never counts as the original raw log", (t) => {
  const ledger = new ReceiptLedger({ clock: manualClock(), maxEvidenceAgeMs: 60_000 });
  const coalesced = receipt({
    seq: 1,
    ranges: [[1, 100]],
    obligation: { obligationId: "ob-buddy", releaseAuthority: { kind: "control_log", region: "us-east" } },
    payload: { representation: "coalesced", sourceCutSeq: 100, manifest: { baseSnapshots: [{ snapshotId: "snap7", volume: "vol1", throughSeq: 0 }], consistencyCuts: [{ volume: "vol1", lane: "l1", throughSeq: 80 }] } },
  });
  ledger.apply(signed(batchOf([coalesced, receipt({ seq: 2, ranges: [[90, 100]] })])), context());
  t.deepEqual(ledger.coverage("vol1", "l0", { representation: "raw" }).toJSON(), [[90, 100]]);
  t.deepEqual(ledger.coverage("vol1", "l0", { representation: "coalesced" }).toJSON(), [[1, 100]]);
  const kept = ledger.holdings({ obligationId: "ob-buddy" })[0]!.receipt.payload;
  t.is(kept.representation, "coalesced");
  t.is(kept.representation === "coalesced" ? kept.sourceCutSeq : -1, 100);
});

test("a raw payload that claims a source cut is malformed", (t) => {
  assertRejected(t, "malformed", (l) =>
    l.apply(crafted(batchOf([receipt({ seq: 2 })]), (raw) => (((raw[8] as unknown[][])[0]![9] as unknown[])[3] = 7)), context()),
  );
});

test("the batch is bound to the stream in its signed bytes (not only in the transport subject)", (t) => {
  const b = decodeReceiptBatch(signed(batchOf([receipt({ seq: 1 })])).body);
  t.deepEqual(b.stream, STREAM);
  t.deepEqual(b.holder, { holderId: "h1", incarnation: 1 });
});

test("any corrupted byte of a signed batch yields a typed ReceiptError and never an accepted batch", (t) => {
  const s = signed(batchOf([receipt({ seq: 1, ranges: [[1, 4], [8, 9]] }), receipt({ seq: 2, residency: disk() })]));
  fc.assert(
    fc.property(fc.integer({ min: 0, max: s.body.byteLength - 1 }), fc.integer({ min: 1, max: 255 }), (at, flip) => {
      const body = Uint8Array.from(s.body);
      body[at] = body[at]! ^ flip;
      try {
        verifyReceiptBatch({ body, signature: s.signature }, context());
        return false;
      } catch (err) {
        return err instanceof ReceiptError;
      }
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test("random receipts survive encode, sign, verify and decode unchanged", (t) => {
  const rangesArb = fc.array(fc.tuple(fc.nat(10_000), fc.nat(50)), { maxLength: 6 }).map((xs) => xs.map(([a, n]) => [a, a + n] as [number, number]));
  fc.assert(
    fc.property(fc.array(fc.record({ ranges: rangesArb, onDisk: fc.boolean(), base: fc.nat(10_000) }), { minLength: 1, maxLength: 8 }), (rows) => {
      const b = batchOf(rows.map((r, i) => receipt({ seq: i + 1, ranges: r.ranges, prefixBase: r.base, residency: r.onDisk ? disk() : ram() })));
      const v = verifyReceiptBatch(signed(b), context());
      return Buffer.compare(encodeReceiptBatch(v), encodeReceiptBatch(b)) === 0;
    }),
    { numRuns: 100 },
  );
  t.pass();
});
