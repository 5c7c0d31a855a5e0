import test from "ava";
import fc from "fast-check";
import { encode } from "@msgpack/msgpack";
import { encodeUnitMessage, readUnitMessage, SENT_THROUGH_HEADER } from "../../transport/unit-frames.ts";
import { fastDecodeUnit } from "../../transport/protocol/wire/unit-fast-decode.ts";
import { fastDecodeUnitFrame, writeUnitFrame } from "../../transport/protocol/wire/unit-frame-codec.ts";
import {
  decodeAny,
  decodeMessage,
  encodeMessage,
  unitFrameSchema,
  unitFrameSpec,
  unitSchema,
  unitSpec,
  WireError,
  WireErrorCode,
  type WireUnit,
} from "../../transport/protocol/wire/index.ts";
import { deepEqualBytes } from "../kit/deep-equal-bytes.ts";

// Identifiers: mostly ASCII tokens (the fast path), some non-ASCII (the general path).
const token = fc.oneof(
  fc.stringMatching(/^[a-zA-Z0-9_-]{1,40}$/),
  fc.constantFrom("vol-ø", "lane-é", "v".repeat(128), "x".repeat(31), "y".repeat(32)),
);
const seq = fc.oneof(fc.nat({ max: 300 }), fc.constantFrom(127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 40));
const timestamp = fc.oneof(fc.nat(), fc.double({ min: 0, max: 2e12, noNaN: true }).map((x) => x + 0), fc.constant(1_764_000_000_000)); // + 0: no -0
const payloadSize = fc.oneof(fc.nat({ max: 300 }), fc.constantFrom(255, 256, 65_535, 65_536, 70_000));

const unitArb: fc.Arbitrary<WireUnit> = fc
  .record({ volume: token, lane: token, term: seq, firstSeq: seq, records: fc.integer({ min: 1, max: 20 }), size: payloadSize, fill: fc.nat(255) })
  .chain((r) =>
    fc.array(timestamp, { minLength: r.records, maxLength: r.records }).map((commitTs) => ({
      volume: r.volume,
      lane: r.lane,
      term: r.term,
      firstSeq: r.firstSeq,
      lastSeq: r.firstSeq + r.records - 1,
      commitTs,
      payload: new Uint8Array(r.size).fill(r.fill),
      digest: new Uint8Array(32).fill(r.fill ^ 0x5a),
    })),
  );

/** What the general path makes of `bytes`: the decoded unit, or the WireError. */
function general(bytes: Uint8Array): { unit?: unknown; error?: WireError } {
  try {
    const m = decodeAny(bytes);
    if (m.kind !== "unit") return { error: new WireError(WireErrorCode.WrongKind, "not a unit", {}) };
    return { unit: m.body };
  } catch (err) {
    if (err instanceof WireError) return { error: err };
    throw err;
  }
}

test("the fast unit decoder reads exactly what the general decoder reads from our own encodings", (t) => {
  fc.assert(
    fc.property(unitArb, (u) => {
      const bytes = encodeMessage(unitSpec, u);
      const fast = fastDecodeUnit(bytes);
      const slow = general(bytes);
      deepEqualBytes(t, slow.unit, u);
      // ASCII identifiers take the fast path; any result it gives equals the general one.
      if (/^[\x21-\x7e]+$/.test(u.volume + u.lane)) t.not(fast, undefined);
      if (fast !== undefined) deepEqualBytes(t, fast, slow.unit);
    }),
    { numRuns: 300 },
  );
});

test("the fast unit decoder never accepts what the general path refuses (byte flips, truncations, foreign layouts)", (t) => {
  const base = encodeMessage(unitSpec, { volume: "vol-a", lane: "l0", term: 2, firstSeq: 10, lastSeq: 12, commitTs: [1, 2.5, 1_764_000_000_000], payload: new Uint8Array(300).fill(3), digest: new Uint8Array(32).fill(9) });
  assertFlipsNeverAcceptedAlone(base, fastDecodeUnit, (bytes) => general(bytes).unit, 3000);
  for (let len = 0; len < base.byteLength; len++) t.is(fastDecodeUnit(base.subarray(0, len)), undefined, `prefix ${len}`);
  const padded = new Uint8Array(base.byteLength + 1);
  padded.set(base);
  t.is(fastDecodeUnit(padded), undefined, "trailing byte");
  // Same content, other key order or an extra field: left to the general path (which accepts both).
  const body = { lane: "l0", volume: "vol-a", term: 2, firstSeq: 10, lastSeq: 10, commitTs: [1], payload: new Uint8Array(1), digest: new Uint8Array(32) };
  t.is(fastDecodeUnit(encode({ k: "unit", v: 1, b: body })), undefined);
  t.is(fastDecodeUnit(encode({ k: "unit", v: 1, f: [], b: body })), undefined);
  t.truthy(decodeMessage(unitSpec, encode({ k: "unit", v: 1, b: body })));
  // A bad identifier byte, a short digest: refused by both.
  for (const bad of [{ volume: "a.b" }, { lane: "a b" }, { digest: new Uint8Array(31) }, { lastSeq: 9 }]) {
    const bytes = encode({ k: "unit", v: 1, b: { ...body, lane: "l0", ...bad } });
    t.is(fastDecodeUnit(bytes), undefined);
    t.truthy(general(bytes).error);
  }
});

test("the unit fast path for bodies never accepts what the schema refuses, and returns exactly the schema's output", (t) => {
  const value = fc.oneof(fc.jsonValue(), fc.uint8Array({ maxLength: 40 }), fc.constant(new Uint8Array(32)));
  const fields = ["volume", "lane", "term", "firstSeq", "lastSeq", "commitTs", "payload", "digest", "extra"];
  fc.assert(
    fc.property(unitArb, fc.dictionary(fc.constantFrom(...fields), value, { maxKeys: 3 }), (u, overrides) => {
      const body = { ...u, ...overrides };
      const fast = unitSpec.fastPath!(body);
      const schema = unitSchema.safeParse(body);
      if (fast === undefined) return true;
      return schema.success && JSON.stringify(schema.data, bytesAsArrays) === JSON.stringify(fast, bytesAsArrays);
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

const frameArb = fc.array(fc.tuple(fc.uint8Array({ maxLength: 600 }), fc.integer({ min: 1, max: 2 ** 40 })), { minLength: 2, maxLength: 40 }).map((parts) => {
  let total = 0;
  return { units: parts.map(([u]) => u), sentThrough: parts.map(([, step]) => (total += step)) };
});

test("writeUnitFrame writes the same bytes as the general encoder, and the fast frame reader reads them back the same", (t) => {
  fc.assert(
    fc.property(frameArb, (f) => {
      const fast = writeUnitFrame(f.units, f.sentThrough);
      t.deepEqual(Buffer.from(fast), Buffer.from(encodeMessage(unitFrameSpec, f)));
      t.deepEqual(fastDecodeUnitFrame(fast), decodeMessage(unitFrameSpec, fast));
      t.is(JSON.stringify(decodeAny(fast).body, bytesAsArrays), JSON.stringify(f, bytesAsArrays));
    }),
    { numRuns: 300 },
  );
  // Big units (bin16, bin32) and 16+ units (array16).
  const big = { units: [new Uint8Array(70_000), new Uint8Array(300), ...Array.from({ length: 20 }, () => new Uint8Array(5))], sentThrough: Array.from({ length: 22 }, (_, i) => (i + 1) * 70_000) };
  t.deepEqual(Buffer.from(writeUnitFrame(big.units, big.sentThrough)), Buffer.from(encodeMessage(unitFrameSpec, big)));
});

test("writeUnitFrame refuses frames the schema refuses: one unit, figures not increasing", (t) => {
  const one = t.throws(() => writeUnitFrame([new Uint8Array(1)], [1]), { instanceOf: WireError });
  t.is(one?.code, WireErrorCode.InvalidField);
  const flat = t.throws(() => writeUnitFrame([new Uint8Array(1), new Uint8Array(1)], [5, 5]), { instanceOf: WireError });
  t.is(flat?.field, "sentThrough.1");
  t.false(unitFrameSchema.safeParse({ units: [new Uint8Array(1), new Uint8Array(1)], sentThrough: [5, 5] }).success);
});

test("the fast frame reader never accepts what the general path refuses", (t) => {
  const base = writeUnitFrame([new Uint8Array(40).fill(1), new Uint8Array(300).fill(2), new Uint8Array(0)], [40, 340, 2 ** 33]);
  const generalFrame = (bytes: Uint8Array) => {
    try {
      const m = decodeAny(bytes);
      return m.kind === "unit-frame" ? m.body : undefined;
    } catch {
      return undefined;
    }
  };
  assertFlipsNeverAcceptedAlone(base, fastDecodeUnitFrame, generalFrame, 2000);
  for (let len = 0; len < base.byteLength; len++) t.is(fastDecodeUnitFrame(base.subarray(0, len)), undefined);
  // A traced frame (per-unit headers) takes the general path.
  const traced = encodeMessage(unitFrameSpec, { units: [new Uint8Array(1), new Uint8Array(1)], sentThrough: [1, 2], headers: [{ traceparent: "a" }, {}] });
  t.is(fastDecodeUnitFrame(traced), undefined);
  t.deepEqual((decodeAny(traced).body as { headers: unknown }).headers, [{ traceparent: "a" }, {}]);
});

function unitBytes(seqNo: number, overrides: Partial<WireUnit> = {}): Uint8Array {
  return encodeMessage(unitSpec, { volume: "v", lane: "l", term: 1, firstSeq: seqNo, lastSeq: seqNo, commitTs: [seqNo], payload: new Uint8Array(8).fill(seqNo), digest: new Uint8Array(32), ...overrides });
}

test("a lone unit goes out as its own bare encoding; several go as one frame carrying each unit's figure and trace headers", (t) => {
  const one = unitBytes(1);
  t.is(encodeUnitMessage([{ data: one, sentThrough: 72 }]), one, "no re-encoding for a lone unit");
  const frame = encodeUnitMessage([
    { data: unitBytes(1), sentThrough: 72, headers: { traceparent: "00-aa-bb-01" } },
    { data: unitBytes(2), sentThrough: 144 },
  ]);
  const read = readUnitMessage({ data: frame, headers: {} }, 144);
  if (read.kind !== "units") return t.fail(read.kind);
  t.deepEqual(read.units.map((u) => [u.unit?.firstSeq, u.sentThrough, u.headers]), [
    [1, 72, { traceparent: "00-aa-bb-01" }],
    [2, 144, {}],
  ]);
  t.deepEqual(Buffer.from(read.units[1]!.data), Buffer.from(unitBytes(2)), "each unit keeps its exact encoding (what a holder forwards)");
});

test("one undecodable unit inside a frame is reported alone; the frame's other units still read", (t) => {
  const broken = unitBytes(2).slice(0, 20);
  const frame = writeUnitFrame([unitBytes(1), broken, unitBytes(3)], [72, 144, 216]);
  const read = readUnitMessage({ data: frame, headers: {} }, undefined);
  if (read.kind !== "units") return t.fail(read.kind);
  t.deepEqual(read.units.map((u) => u.unit?.firstSeq), [1, undefined, 3]);
  t.is(read.units[1]!.error?.code, WireErrorCode.Malformed);
  t.is(read.units[1]!.sentThrough, 144, "its credit figure is still known, so its credit is not leaked");
});

test("a frame whose Sent-Through header disagrees with its last figure is refused whole", (t) => {
  const frame = writeUnitFrame([unitBytes(1), unitBytes(2)], [72, 144]);
  const err = t.throws(() => readUnitMessage({ data: frame, headers: { [SENT_THROUGH_HEADER]: "999" } }, 999), { instanceOf: WireError });
  t.is(err?.field, "sentThrough");
  t.notThrows(() => readUnitMessage({ data: frame, headers: {} }, 144));
});

/**
 * Property: flipping any byte of `base`, the fast reader either declines (undefined) or returns
 * exactly what the general path returns — it never accepts a message the general path refuses.
 */
function assertFlipsNeverAcceptedAlone(base: Uint8Array, fast: (b: Uint8Array) => unknown, slow: (b: Uint8Array) => unknown, numRuns: number): void {
  fc.assert(
    fc.property(fc.nat({ max: base.byteLength - 1 }), fc.integer({ min: 1, max: 255 }), (at, xor) => {
      const mutated = Uint8Array.from(base);
      mutated[at] = mutated[at]! ^ xor;
      const got = fast(mutated);
      if (got === undefined) return true;
      const want = slow(mutated);
      return want !== undefined && JSON.stringify(want, bytesAsArrays) === JSON.stringify(got, bytesAsArrays);
    }),
    { numRuns },
  );
}

/** JSON.stringify replacer: byte arrays as plain arrays (so equality compares contents). */
function bytesAsArrays(_key: string, value: unknown): unknown {
  return value instanceof Uint8Array ? Array.from(value) : value;
}
