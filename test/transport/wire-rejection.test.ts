import test from "ava";
import fc from "fast-check";
import { encode } from "@msgpack/msgpack";
import {
  UNIT_MAX_BYTES,
  WireError,
  WireErrorCode,
  creditSpec,
  decodeAny,
  decodeMessage,
  encodeMessage,
  unitSchema,
  unitSpec,
  type WireUnit,
} from "../../transport/protocol/wire/index.ts";

const unit: WireUnit = {
  volume: "vol-a",
  lane: "lane-0",
  term: 2,
  firstSeq: 10,
  lastSeq: 13,
  commitTs: [1000, 1001, 1002, 1003],
  payload: Uint8Array.from({ length: 64 }, (_, i) => i),
  digest: new Uint8Array(32).fill(9),
};
const unitBytes = encodeMessage(unitSpec, unit);
const creditBytes = encodeMessage(creditSpec, { holder: "h1", sender: "w1", volume: "vol-a", lane: "lane-0", incarnation: 1, session: 1, window: 1, grantedThrough: 4096, grantSeq: 1 });

/** Encodes a hand-made envelope, bypassing encodeMessage's checks (what a buggy or hostile peer sends). */
function rawEnvelope(env: Record<string, unknown>): Uint8Array {
  return encode(env);
}
function rawUnit(overrides: Record<string, unknown>): Uint8Array {
  return rawEnvelope({ k: "unit", v: 1, b: { ...unit, ...overrides } });
}

/** Runs `fn`; returns the WireError it threw, or fails the property with whatever else happened. */
function wireErrorOf(fn: () => unknown): WireError {
  try {
    fn();
  } catch (err) {
    if (err instanceof WireError) return err;
    throw new Error(`expected a WireError, got ${String(err)}`, { cause: err });
  }
  throw new Error("expected a WireError, but decoding succeeded");
}

const ALL_CODES = new Set<string>(Object.values(WireErrorCode));

test("random byte strings are refused with a WireError, never another exception", (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
      for (const decode of [() => decodeAny(bytes), () => decodeMessage(unitSpec, bytes), () => decodeMessage(creditSpec, bytes)]) {
        const err = wireErrorOf(decode);
        if (!ALL_CODES.has(err.code)) return false;
      }
      return true;
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test("random msgpack values as bodies either decode to a schema-valid unit or are refused as invalid_field (malformed for __proto__ keys)", (t) => {
  const value = fc.jsonValue();
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom(...Object.keys(unit), "extra"), value), (body) => {
      const bytes = rawEnvelope({ k: "unit", v: 1, b: body });
      try {
        return unitSchema.safeParse(decodeMessage(unitSpec, bytes)).success;
      } catch (err) {
        if (!(err instanceof WireError)) return false;
        // A nested "__proto__" key is refused by the msgpack layer itself (prototype pollution guard).
        if (err.code === WireErrorCode.Malformed) return JSON.stringify(body).includes('"__proto__"');
        return err.code === WireErrorCode.InvalidField;
      }
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

test("every truncation of a valid unit and credit encoding is malformed", (t) => {
  for (const full of [unitBytes, creditBytes]) {
    for (let len = 0; len < full.byteLength; len++) {
      const err = wireErrorOf(() => decodeAny(full.subarray(0, len)));
      t.is(err.code, WireErrorCode.Malformed, `prefix of ${len}/${full.byteLength} bytes`);
    }
  }
});

test("trailing bytes after a valid encoding are malformed", (t) => {
  const padded = new Uint8Array(unitBytes.byteLength + 1);
  padded.set(unitBytes);
  t.is(wireErrorOf(() => decodeMessage(unitSpec, padded)).code, WireErrorCode.Malformed);
  t.is(wireErrorOf(() => decodeAny(padded)).code, WireErrorCode.Malformed);
});

test("a single flipped byte either still decodes to a fully valid unit or is refused with a WireError", (t) => {
  fc.assert(
    fc.property(fc.nat({ max: unitBytes.byteLength - 1 }), fc.integer({ min: 1, max: 255 }), (at, xor) => {
      const mutated = Uint8Array.from(unitBytes);
      mutated[at] = (mutated[at] ?? 0) ^ xor;
      try {
        return unitSchema.safeParse(decodeMessage(unitSpec, mutated)).success;
      } catch (err) {
        return err instanceof WireError && ALL_CODES.has(err.code);
      }
    }),
    { numRuns: 3000 },
  );
  t.pass();
});

test("a value of the wrong type in any unit field is invalid_field naming that field", (t) => {
  const wrongValues: unknown[] = ["text", null, true, [1], { a: 1 }, 1.5, -1, new Uint8Array(32)];
  for (const field of Object.keys(unit)) {
    for (const bad of wrongValues) {
      // Skip the few "wrong" values that are right for this field.
      if ((field === "digest" || field === "payload") && bad instanceof Uint8Array) continue;
      if ((field === "volume" || field === "lane") && typeof bad === "string") continue;
      if (field === "commitTs" && Array.isArray(bad)) continue;
      const err = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ [field]: bad })));
      t.is(err.code, WireErrorCode.InvalidField, `${field} = ${String(bad)}`);
      t.is(err.field, field, `${field} = ${String(bad)}`);
    }
  }
});

test("a missing unit field is invalid_field naming it", (t) => {
  for (const field of Object.keys(unit)) {
    const body: Record<string, unknown> = { ...unit };
    delete body[field];
    const err = wireErrorOf(() => decodeMessage(unitSpec, rawEnvelope({ k: "unit", v: 1, b: body })));
    t.is(err.code, WireErrorCode.InvalidField);
    t.is(err.field, field);
  }
});

test("out-of-range integers (negative, fractional, beyond 2^53) are invalid_field", (t) => {
  const badInts = fc.oneof(fc.integer({ max: -1 }), fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)), fc.constantFrom(2 ** 53, 2 ** 60, 2 ** 64 - 1));
  fc.assert(
    fc.property(fc.constantFrom("term", "firstSeq", "lastSeq"), badInts, (field, bad) => {
      const err = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ [field]: bad })));
      return err.code === WireErrorCode.InvalidField && err.field === field;
    }),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(fc.constantFrom("grantedThrough", "grantSeq"), badInts, (field, bad) => {
      const body = { holder: "h1", sender: "w1", volume: "v", lane: "l", incarnation: 1, session: 1, window: 1, grantedThrough: 1, grantSeq: 1, [field]: bad };
      const err = wireErrorOf(() => decodeAny(rawEnvelope({ k: "credit", v: 2, b: body })));
      return err.code === WireErrorCode.InvalidField && err.field === field;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test("a bad commit timestamp is reported with its dotted index path", (t) => {
  const err = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ commitTs: [1000, 1001, 1002, -5] })));
  t.is(err.code, WireErrorCode.InvalidField);
  t.is(err.field, "commitTs.3");
});

test("cross-field rules: lastSeq below firstSeq, or commitTs of the wrong length, are invalid_field", (t) => {
  const below = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ firstSeq: 14, lastSeq: 13 })));
  t.is(below.code, WireErrorCode.InvalidField);
  t.is(below.field, "lastSeq");
  const short = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ commitTs: [1, 2, 3] })));
  t.is(short.code, WireErrorCode.InvalidField);
  t.is(short.field, "commitTs");
});

test("a digest that is not exactly 32 bytes is invalid_field", (t) => {
  for (const len of [0, 31, 33, 64]) {
    const err = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ digest: new Uint8Array(len) })));
    t.is(err.field, "digest", `length ${len}`);
  }
});

test("identifiers that cannot be subject tokens are invalid_field", (t) => {
  for (const volume of ["", "a.b", "a*", "a>", "a b", "x\u0000"]) {
    const err = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ volume })));
    t.is(err.code, WireErrorCode.InvalidField, JSON.stringify(volume));
    t.is(err.field, "volume");
  }
});

test("payload bytes sent as a string (e.g. base64) are invalid_field", (t) => {
  const err = wireErrorOf(() => decodeMessage(unitSpec, rawUnit({ payload: Buffer.from(unit.payload).toString("base64") })));
  t.is(err.code, WireErrorCode.InvalidField);
  t.is(err.field, "payload");
});

test("a message of another kind is wrong_kind; an unregistered kind is unknown_kind", (t) => {
  const wrong = wireErrorOf(() => decodeMessage(unitSpec, creditBytes));
  t.is(wrong.code, WireErrorCode.WrongKind);
  t.is(wrong.field, "k");
  fc.assert(
    fc.property(fc.string({ minLength: 1 }).filter((k) => !["unit", "credit", "credit-request"].includes(k)), (kind) => {
      const err = wireErrorOf(() => decodeAny(rawEnvelope({ k: kind, v: 1, b: {} })));
      return err.code === WireErrorCode.UnknownKind && err.field === "k";
    }),
  );
});

test("an unknown version of a known kind is unsupported_version", (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: Number.MAX_SAFE_INTEGER }), (v) => {
      const bytes = rawEnvelope({ k: "unit", v, b: unit });
      const a = wireErrorOf(() => decodeMessage(unitSpec, bytes));
      const b = wireErrorOf(() => decodeAny(bytes));
      return a.code === WireErrorCode.UnsupportedVersion && b.code === WireErrorCode.UnsupportedVersion && a.field === "v";
    }),
    { numRuns: 200 },
  );
  t.pass();
});

test("an unknown required feature is unsupported_feature, never ignored", (t) => {
  fc.assert(
    fc.property(fc.array(fc.string(), { minLength: 1, maxLength: 4 }), (features) => {
      const bytes = rawEnvelope({ k: "unit", v: 1, f: features, b: unit });
      const a = wireErrorOf(() => decodeMessage(unitSpec, bytes));
      const b = wireErrorOf(() => decodeAny(bytes));
      return a.code === WireErrorCode.UnsupportedFeature && b.code === WireErrorCode.UnsupportedFeature && a.field === "f.0";
    }),
    { numRuns: 200 },
  );
  t.pass();
});

test("an envelope of the wrong shape is malformed and names the envelope key", (t) => {
  const cases: [unknown, string][] = [
    [[1, 2, 3], ""],
    [42, ""],
    ["unit", ""],
    [null, ""],
    [new Uint8Array(4), ""],
    [{ v: 1, b: unit }, "k"],
    [{ k: 7, v: 1, b: unit }, "k"],
    [{ k: "unit", b: unit }, "v"],
    [{ k: "unit", v: 0, b: unit }, "v"],
    [{ k: "unit", v: 1.5, b: unit }, "v"],
    [{ k: "unit", v: "1", b: unit }, "v"],
    [{ k: "unit", v: 1, f: "x", b: unit }, "f"],
    [{ k: "unit", v: 1, f: [1], b: unit }, "f"],
    [{ k: "unit", v: 1 }, "b"],
  ];
  for (const [env, field] of cases) {
    const err = wireErrorOf(() => decodeAny(encode(env)));
    t.is(err.code, WireErrorCode.Malformed, JSON.stringify(env));
    t.is(err.field, field, JSON.stringify(env));
  }
});

test("msgpack extension types and __proto__ keys are malformed", (t) => {
  const withDate = encode({ k: "unit", v: 1, b: { ...unit, when: new Date(0) } });
  t.is(wireErrorOf(() => decodeAny(withDate)).code, WireErrorCode.Malformed);
  // A map {"__proto__": 1}: fixmap(1), fixstr(9) "__proto__", 1.
  const proto = Uint8Array.from([0x81, 0xa9, ...new TextEncoder().encode("__proto__"), 0x01]);
  t.is(wireErrorOf(() => decodeAny(proto)).code, WireErrorCode.Malformed);
});

test("input over maxBytes is too_large before any parsing", (t) => {
  const huge = new Uint8Array(UNIT_MAX_BYTES + 1).fill(0xc1); // 0xc1 is never valid msgpack
  t.is(wireErrorOf(() => decodeMessage(unitSpec, huge)).code, WireErrorCode.TooLarge);
  t.is(wireErrorOf(() => decodeAny(huge)).code, WireErrorCode.TooLarge);
  // The kind's own limit applies after dispatch: a credit padded past 4 KiB with an ignored field.
  const fatCredit = rawEnvelope({ k: "credit", v: 2, b: { holder: "h", sender: "s", volume: "v", lane: "l", incarnation: 1, session: 1, window: 1, grantedThrough: 0, grantSeq: 0, pad: new Uint8Array(5000) } });
  t.is(wireErrorOf(() => decodeAny(fatCredit)).code, WireErrorCode.TooLarge);
});

test("non-byte input is malformed rather than a crash", (t) => {
  for (const bad of [undefined, null, "bytes", [1, 2], 5]) {
    t.is(wireErrorOf(() => decodeAny(bad as unknown as Uint8Array)).code, WireErrorCode.Malformed);
  }
});

test("encodeMessage refuses an invalid body, an unknown required feature and an oversized unit", (t) => {
  const invalid = wireErrorOf(() => encodeMessage(unitSpec, { ...unit, lastSeq: 9 }));
  t.is(invalid.code, WireErrorCode.InvalidField);
  t.is(invalid.field, "lastSeq");
  const feature = wireErrorOf(() => encodeMessage(unitSpec, unit, { requiredFeatures: ["time-travel"] }));
  t.is(feature.code, WireErrorCode.UnsupportedFeature);
  t.is(feature.field, "f.0");
  const big = wireErrorOf(() => encodeMessage(unitSpec, { ...unit, payload: new Uint8Array(UNIT_MAX_BYTES) }));
  t.is(big.code, WireErrorCode.TooLarge);
});
