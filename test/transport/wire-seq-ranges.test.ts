import test from "ava";
import { encode } from "@msgpack/msgpack";
import { decodeMessage, releaseFrontierSpec, retentionChallengeSpec, unitFetchSpec, WireError, WireErrorCode, writerProgressSpec } from "../../transport/protocol/index.ts";

// Issue #46 (item 6): an inverted range decoded fine and reached a receiver's range arithmetic,
// which threw outside its refusal path (a holder counted it as an internal error). Every kind
// that carries sequence ranges now refuses one at decode (`invalid_field`).

const raw = (k: string, v: number, b: Record<string, unknown>) => encode({ k, v, b });

const cases: [string, () => unknown, () => unknown][] = [
  [
    "release-frontier",
    () => decodeMessage(releaseFrontierSpec, raw("release-frontier", 1, { holder: "h1", volume: "vol-a", lane: "l0", ranges: [[10, 5]], epoch: 1, controlSeq: 1 })),
    () => decodeMessage(releaseFrontierSpec, raw("release-frontier", 1, { holder: "h1", volume: "vol-a", lane: "l0", ranges: [[5, 5], [7, 2 ** 53 - 1]], epoch: 1, controlSeq: 1 })),
  ],
  [
    "unit-fetch",
    () => decodeMessage(unitFetchSpec, raw("unit-fetch", 1, { holder: "h1", volume: "vol-a", lane: "l0", ranges: [[1, 4], [9, 8]], after: -1, limit: 10 })),
    () => decodeMessage(unitFetchSpec, raw("unit-fetch", 1, { holder: "h1", volume: "vol-a", lane: "l0", ranges: [[1, 4]], after: -1, limit: 10 })),
  ],
  [
    "writer-progress",
    () => decodeMessage(writerProgressSpec, raw("writer-progress", 1, { writer: "w1", volume: "vol-a", term: 1, lanes: [{ lane: "l0", head: 9, runs: [[9, 3, 1, 512]] }], at: 1 })),
    () => decodeMessage(writerProgressSpec, raw("writer-progress", 1, { writer: "w1", volume: "vol-a", term: 1, lanes: [{ lane: "l0", head: 9, runs: [[3, 9, 1, 512]] }], at: 1 })),
  ],
];

for (const [kind, inverted, fine] of cases) {
  test(`${kind}: an inverted sequence range is an invalid field at decode; a proper one decodes`, (t) => {
    const err = t.throws(inverted, { instanceOf: WireError });
    t.is(err?.code, WireErrorCode.InvalidField);
    t.notThrows(fine);
  });
}

test("retention challenges refuse inverted ranges too", (t) => {
  const body = { holder: "h1", volume: "vol-a", lane: "l0", nonce: new Uint8Array(32), seqs: [[4, 1]] };
  const err = t.throws(() => decodeMessage(retentionChallengeSpec, raw("retention-challenge", 1, body)), { instanceOf: WireError });
  t.is(err?.code, WireErrorCode.InvalidField);
  t.notThrows(() => decodeMessage(retentionChallengeSpec, raw("retention-challenge", 1, { ...body, seqs: [[1, 4]] })));
});
