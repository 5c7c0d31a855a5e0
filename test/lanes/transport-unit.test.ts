import test from "ava";
import {
  InvalidUnitError,
  UnitDigestError,
  makeTransportUnit,
  unitDigest,
  validateTransportUnit,
  type UnitFields,
} from "../../lanes/transport-unit.ts";

const fields = (over: Partial<UnitFields> = {}): UnitFields => ({
  volume: "vol1",
  lane: "l0",
  term: 3,
  firstSeq: 10,
  lastSeq: 12,
  commitTs: [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002],
  payload: new Uint8Array([1, 2, 3, 4, 5]),
  ...over,
});

test("a made unit carries a 32-byte SHA-256 digest and validates", (t) => {
  const u = makeTransportUnit(fields());
  t.is(u.digest.length, 32);
  t.is(validateTransportUnit(u), u);
});

test("the digest covers every header field and the payload", (t) => {
  const base = unitDigest(fields());
  const variants: Partial<UnitFields>[] = [
    { volume: "vol2" },
    { lane: "l1" },
    { term: 4 },
    { firstSeq: 11, lastSeq: 13 },
    { commitTs: [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_003] },
    { payload: new Uint8Array([1, 2, 3, 4, 6]) },
  ];
  for (const v of variants) t.notDeepEqual(unitDigest(fields(v)), base, JSON.stringify(Object.keys(v)));
});

test("a tampered payload is rejected with digest_mismatch", (t) => {
  const u = makeTransportUnit(fields());
  const bad = { ...u, payload: new Uint8Array([9, 2, 3, 4, 5]) };
  const err = t.throws(() => validateTransportUnit(bad), { instanceOf: UnitDigestError });
  t.is(err?.code, "digest_mismatch");
});

test("malformed units are rejected with invalid_unit", (t) => {
  const good = makeTransportUnit(fields());
  const bads: unknown[] = [
    { ...good, volume: "a.b" },
    { ...good, lane: "x y" },
    { ...good, lane: "" },
    { ...good, term: -1 },
    { ...good, firstSeq: 5, lastSeq: 4 },
    { ...good, commitTs: [1, 2] },
    { ...good, commitTs: [1, Number.NaN, 3] },
    { ...good, digest: new Uint8Array(31) },
    { ...good, payload: "text" },
  ];
  for (const b of bads) {
    const err = t.throws(() => validateTransportUnit(b as never), { instanceOf: InvalidUnitError });
    t.is(err?.code, "invalid_unit");
  }
});
