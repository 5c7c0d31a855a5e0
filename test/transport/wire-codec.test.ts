import test from "ava";
import { decode, encode } from "@msgpack/msgpack";
import { z } from "zod";
import {
  WireError,
  WireErrorCode,
  decodeAny,
  decodeMessage,
  defineFeature,
  defineMessage,
  encodeMessage,
  isKnownFeature,
  registeredKinds,
  unitSpec,
  wireFields,
  type WireUnit,
} from "../../transport/protocol/wire/index.ts";
import { CustodyError } from "../../core/custody-error.ts";

const unit: WireUnit = {
  volume: "vol-a",
  lane: "lane-0",
  term: 1,
  firstSeq: 0,
  lastSeq: 0,
  commitTs: [1_764_000_000_000],
  payload: Uint8Array.from({ length: 4096 }, (_, i) => (i * 13) & 0xff),
  digest: new Uint8Array(32).fill(1),
};

// Test-only kinds, registered in this test process only.
const noteV1 = defineMessage({ kind: "test-note", version: 1, schema: z.object({ text: z.string() }) });
const noteV2 = defineMessage({ kind: "test-note", version: 2, schema: z.object({ text: z.string(), seq: wireFields.uint }) });
const COMPRESSED = defineFeature("test-compressed-body", "test: the body is compressed");

function thrown(fn: () => unknown): WireError {
  const err = (() => {
    try {
      fn();
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  if (!(err instanceof WireError)) throw new Error(`expected a WireError, got ${String(err)}`);
  return err;
}

test("the envelope is a msgpack map {k, v, b} and payload bytes travel as msgpack bin", (t) => {
  const bytes = encodeMessage(unitSpec, unit);
  const env = decode(bytes) as Record<string, unknown>;
  t.deepEqual(Object.keys(env).sort(), ["b", "k", "v"]);
  t.is(env["k"], "unit");
  t.is(env["v"], 1);
  const body = env["b"] as Record<string, unknown>;
  t.true(body["payload"] instanceof Uint8Array);
  // bin 16 header (0xc5, length 0x1000) immediately followed by the raw payload: no base64, no JSON.
  const raw = Buffer.from(bytes);
  const at = raw.indexOf(Buffer.concat([Buffer.from([0xc5, 0x10, 0x00]), Buffer.from(unit.payload)]));
  t.true(at > 0);
  t.true(bytes.byteLength < unit.payload.byteLength + 200);
});

test("required features are carried in f and accepted when this build knows them", (t) => {
  t.true(isKnownFeature(COMPRESSED));
  const bytes = encodeMessage(unitSpec, unit, { requiredFeatures: [COMPRESSED] });
  t.deepEqual((decode(bytes) as Record<string, unknown>)["f"], [COMPRESSED]);
  t.deepEqual(decodeMessage(unitSpec, bytes), unit);
});

test("unknown optional body fields are ignored and stripped from the result", (t) => {
  const bytes = encode({ k: "unit", v: 1, b: { ...unit, hint: "from-a-newer-peer", extra: { nested: [1, 2] } } });
  const got = decodeMessage(unitSpec, bytes) as unknown as Record<string, unknown>;
  t.deepEqual(got, unit as unknown as Record<string, unknown>);
  t.false("hint" in got);
  t.false("extra" in got);
});

test("unknown envelope keys are ignored", (t) => {
  const bytes = encode({ k: "unit", v: 1, b: unit, x: "future envelope field" });
  t.deepEqual(decodeMessage(unitSpec, bytes), unit);
});

test("fields the caller passes beyond the schema are not encoded", (t) => {
  const bytes = encodeMessage(unitSpec, { ...unit, secret: "do-not-send" } as WireUnit);
  t.false(Buffer.from(bytes).includes(Buffer.from("do-not-send")));
});

test("a Buffer payload encodes like a Uint8Array and decodes to a Uint8Array", (t) => {
  const bytes = encodeMessage(unitSpec, { ...unit, payload: Buffer.from(unit.payload) });
  const got = decodeMessage(unitSpec, bytes);
  t.true(got.payload instanceof Uint8Array);
  t.deepEqual(Buffer.from(got.payload), Buffer.from(unit.payload));
});

test("decodeAny dispatches on kind and version to the matching schema", (t) => {
  const v1 = encodeMessage(noteV1, { text: "hello" });
  const v2 = encodeMessage(noteV2, { text: "hello", seq: 4 });
  t.deepEqual(decodeAny(v1), { kind: "test-note", version: 1, body: { text: "hello" } });
  t.deepEqual(decodeAny(v2), { kind: "test-note", version: 2, body: { text: "hello", seq: 4 } });
  // A v1-only decoder refuses v2 rather than reading it as v1.
  const err = thrown(() => decodeMessage(noteV1, v2));
  t.is(err.code, WireErrorCode.UnsupportedVersion);
  t.is(err.field, "v");
  const unknownVersion = thrown(() => decodeAny(encode({ k: "test-note", v: 3, b: { text: "x" } })));
  t.is(unknownVersion.code, WireErrorCode.UnsupportedVersion);
  t.deepEqual(unknownVersion.detail["supported"], [1, 2]);
});

test("a root body of the wrong type names the body as the field", (t) => {
  const err = thrown(() => decodeMessage(noteV1, encode({ k: "test-note", v: 1, b: "just a string" })));
  t.is(err.code, WireErrorCode.InvalidField);
  t.is(err.field, "(body)");
});

test("registeredKinds lists every kind and version, sorted by kind then version", (t) => {
  const kinds = registeredKinds();
  const keys = kinds.map((k) => `${k.kind}@${k.version}`);
  const sorted = [...kinds].sort((a, b) => (a.kind === b.kind ? a.version - b.version : a.kind < b.kind ? -1 : 1));
  t.deepEqual(kinds, sorted);
  t.true(keys.includes("test-note@1") && keys.includes("test-note@2") && keys.includes("unit@1"));
});

test("defineMessage is idempotent for the same spec and refuses a conflicting one", (t) => {
  t.is(defineMessage(noteV1), noteV1);
  const err = thrown(() => defineMessage({ kind: "test-note", version: 1, schema: z.object({}) }));
  t.is(err.code, WireErrorCode.InvalidSpec);
});

test("defineMessage refuses bad kind names, versions and size limits", (t) => {
  for (const spec of [
    { kind: "", version: 1 },
    { kind: "Has.Dot", version: 1 },
    { kind: "has space", version: 1 },
    { kind: "ok-kind", version: 0 },
    { kind: "ok-kind", version: 1.5 },
    { kind: "ok-kind", version: 1, maxBytes: 0 },
  ]) {
    const err = thrown(() => defineMessage({ ...spec, schema: z.object({}) }));
    t.is(err.code, WireErrorCode.InvalidSpec, JSON.stringify(spec));
  }
});

test("defineFeature refuses names that are not lowercase kebab-case", (t) => {
  for (const name of ["", "Upper", "has space", "dot.ted", "x".repeat(65)]) {
    t.is(thrown(() => defineFeature(name, "bad")).code, WireErrorCode.InvalidSpec, name);
  }
});

test("WireError is a CustodyError with a stable code and field", (t) => {
  const err = thrown(() => decodeMessage(unitSpec, encode({ k: "unit", v: 1, b: { ...unit, term: -1 } })));
  t.true(err instanceof CustodyError);
  t.is(err.name, "WireError");
  t.is(err.code, "invalid_field");
  t.is(err.field, "term");
  t.is(err.detail["kind"], "unit");
});
