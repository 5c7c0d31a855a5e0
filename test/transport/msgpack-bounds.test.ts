import test from "ava";
import fc from "fast-check";
import { Encoder } from "@msgpack/msgpack";
import { releaseFrontierSpec } from "../../transport/protocol/wire/holder-messages.ts";
import { decodeControlEvent } from "../../custody/control-event.ts";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import { assertBoundedMsgpack, MAX_MSGPACK_DEPTH } from "../../transport/protocol/wire/msgpack-bounds.ts";
import { decodeMessage, unitSpec, WireError } from "../../transport/protocol/wire/index.ts";

/** `head` repeated until the buffer holds `bytes` bytes. */
function repeated(head: number[], bytes: number): Uint8Array {
  const b = new Uint8Array(bytes);
  for (let i = 0; i + head.length <= bytes; i += head.length) b.set(head, i);
  return b;
}

// Issue #19: 30 KB of nested `array16(65535)` headers took the holder's heap to out-of-memory; 3 KB
// took 535 MB and 4.8 s. Each of these now fails as malformed before anything is allocated.
const BOMBS: [string, Uint8Array][] = [
  ["nested array16(65535), 1 MiB", repeated([0xdc, 0xff, 0xff], 1024 * 1024)],
  ["nested array32(2^32-1)", repeated([0xdd, 0xff, 0xff, 0xff, 0xff], 64 * 1024)],
  ["nested map16(65535)", repeated([0xde, 0xff, 0xff], 64 * 1024)],
  ["nested map32", repeated([0xdf, 0xff, 0xff, 0xff, 0xff], 64 * 1024)],
  ["str32 claiming 4 GiB", Uint8Array.from([0xdb, 0xff, 0xff, 0xff, 0xff, 0x61])],
  ["bin32 claiming 4 GiB", Uint8Array.from([0xc6, 0xff, 0xff, 0xff, 0xff, 0x00])],
  ["ext32 claiming 4 GiB", Uint8Array.from([0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00])],
  ["fixarray(1) nested 1,000 deep", repeated([0x91], 1000)],
  ["wide array whose elements each open another wide array", Uint8Array.from([0x9f, ...Array.from({ length: 15 }, () => [0xdc, 0x00, 0x10]).flat()])],
  ["the never-used head 0xc1", Uint8Array.from([0xc1])],
];

for (const [name, bytes] of BOMBS) {
  test(`decoder bomb refused before allocation: ${name}`, (t) => {
    const scan = t.throws(() => assertBoundedMsgpack(bytes), { instanceOf: WireError });
    t.is(scan?.code, "malformed");
    for (const decode of [() => decodeMessage(releaseFrontierSpec, bytes), () => decodeMessage(unitSpec, bytes)]) {
      const err = t.throws(decode) as { code?: string } | undefined;
      t.true(err?.code === "malformed" || err?.code === "too_large", String(err?.code));
    }
    t.is((t.throws(() => decodeReceiptBatch(bytes)) as { code?: string }).code, "malformed");
    t.is((t.throws(() => decodeControlEvent(bytes)) as { code?: string }).code, "malformed");
  });
}

test("nesting up to the bound is accepted, one level more is refused", (t) => {
  const nested = (depth: number): Uint8Array => Uint8Array.from([...Array.from({ length: depth }, () => 0x91), 0x00]);
  t.is(assertBoundedMsgpack(nested(MAX_MSGPACK_DEPTH)), MAX_MSGPACK_DEPTH + 1);
  t.throws(() => assertBoundedMsgpack(nested(MAX_MSGPACK_DEPTH + 1)), { instanceOf: WireError });
});

test("property: every value msgpack encodes within the depth bound passes the scan, which ends exactly at its last byte", (t) => {
  const encoder = new Encoder({ ignoreUndefined: true });
  const value = fc.letrec((tie) => ({
    leaf: fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.string(), fc.uint8Array({ maxLength: 300 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(Number)),
    node: fc.oneof({ depthSize: "small", withCrossShrink: true }, tie("leaf"), fc.array(tie("node"), { maxLength: 20 }), fc.dictionary(fc.string(), tie("node"), { maxKeys: 10 })),
  })).node;
  fc.assert(
    fc.property(value, (v) => {
      const bytes = encoder.encode(v);
      return assertBoundedMsgpack(bytes) === bytes.byteLength;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test("property: on arbitrary bytes the scan either refuses with malformed or stops inside the input", (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      try {
        const end = assertBoundedMsgpack(bytes);
        return end > 0 && end <= bytes.byteLength;
      } catch (err) {
        return err instanceof WireError && err.code === "malformed";
      }
    }),
    { numRuns: 2000 },
  );
  t.pass();
});
