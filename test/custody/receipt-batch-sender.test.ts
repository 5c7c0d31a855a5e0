import test from "ava";
import fc from "fast-check";
import { decodeReceiptBatch, receiptBatchSender, receiptStream } from "../../custody/receipt-batch.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { decodeBombs } from "../../tools/attack/decode-bombs.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/index.ts";
import { batchOf, keys, receipt, signed } from "./receipt-fixtures.ts";

// A holder passes over batches of holders it does not act on by reading only the sender from the
// head of the message. The peek must agree with the full decoder on everything our encoder writes,
// and must say nothing (undefined) about bytes that do not begin as a v1 batch does.

const token = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,40}$/);

function message(holderId: string, volume: string, lane: string, receipts: number): Uint8Array {
  const list = Array.from({ length: receipts }, (_, i) => receipt({ seq: i + 1, holderId, ranges: [[1, 10 + i]], volume, lane }));
  const s = signed(batchOf(list, receiptStream(volume, lane)), keys.h1!.privateKey);
  return encodeMessage(receiptBatchSpec, { body: s.body, signature: s.signature });
}

test("the sender read from a batch's head is the holder the full decoder reads, for any ids, stream and receipt count", (t) => {
  t.notThrows(() => fc.assert(
    fc.property(token, token, token, fc.integer({ min: 1, max: 40 }), (holderId, volume, lane, n) => {
      const m = message(holderId, volume, lane, n);
      const full = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m).body).holder.holderId;
      return receiptBatchSender(m) === holderId && full === holderId;
    }),
    { numRuns: 200 },
  ));
});

test("a message cut anywhere in its body (shorter than the body's length claims), or not a receipt batch at all, has no sender", (t) => {
  const m = message("h-peer", "vol1", "l0", 2);
  const bodyEnd = indexOfAscii(m, "signature") - 1; // the fixstr header of the key after the body
  for (let cut = 0; cut < bodyEnd; cut++) t.is(receiptBatchSender(m.subarray(0, cut)), undefined, `cut at ${cut}`);
  t.is(receiptBatchSender(m), "h-peer");
  for (const b of decodeBombs(4096)) t.is(receiptBatchSender(b.bytes), undefined, b.name);
  t.is(receiptBatchSender(new Uint8Array(0)), undefined);
});

test("a head that differs from what the encoder writes (kind, version, tuple size, magic, a too-long id) has no sender", (t) => {
  const m = message("h-peer", "vol1", "l0", 1);
  const flip = (at: number, value: number): Uint8Array => {
    const c = m.slice();
    c[at] = value;
    return c;
  };
  t.is(receiptBatchSender(flip(indexOfAscii(m, "receipt-batch"), 0x52)), undefined, "another kind");
  t.is(receiptBatchSender(flip(indexOfAscii(m, "receipt-batch") + "receipt-batch".length + 2, 0x02)), undefined, "envelope version 2");
  const body = indexOfAscii(m, "custody-receipt-batch") - 2; // the 9-tuple header, then the magic's fixstr header
  t.is(m[body], 0x99);
  t.is(receiptBatchSender(flip(body, 0x98)), undefined, "an 8-tuple");
  t.is(receiptBatchSender(flip(body + 2, 0x43)), undefined, "another magic");
  t.is(receiptBatchSender(flip(body + 2 + "custody-receipt-batch".length, 0x02)), undefined, "batch version 2");
  const id = indexOfAscii(m, "h-peer");
  t.is(receiptBatchSender(flip(id, 0xc3)), undefined, "a non-ASCII id");
});

function indexOfAscii(b: Uint8Array, s: string): number {
  return Buffer.from(b).indexOf(Buffer.from(s, "ascii"));
}
