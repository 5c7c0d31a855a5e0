import test from "ava";
import { SimulatedClock } from "xstate";
import { Arena } from "../../arena/arena.ts";
import { decodeSegment } from "../../arena/segment-codec.ts";
import type { SpillEvidence } from "../../arena/spill-stream.ts";
import { unit } from "./fixtures.ts";

const KiB = 1024;
const small = { segmentBytes: 8 * KiB, maxUnitBytes: KiB, initialBytes: 64 * KiB, incrementBytes: 16 * KiB, hardLimitBytes: 128 * KiB, manifestReserveBytes: 8 * KiB, growthLowWaterBytes: 16 * KiB };
/** Where a spill record would be (the arena only keeps it; nothing is read here). */
const evidence: SpillEvidence = { file: "spill.log", offset: 0, length: 1, syncedAt: 0 };

/** An arena with credits holding units 1-4 (1 and 2 under token A, 4 under token B, 3 with none) in one sealed segment. */
function attested(): { arena: Arena; id: number } {
  const arena = new Arena(small, new SimulatedClock());
  arena.grant("v", "l0", 8 * KiB);
  const tokens = ["QUFB", "QUFB", undefined, "QkJC"];
  let id = 0;
  tokens.forEach((token, i) => (id = arena.append(unit(i + 1, i + 1), token).segmentId));
  arena.seal("v", "l0");
  return { arena, id };
}

test("a unit's writer attestation is stored with it in its segment, read back by unit index", (t) => {
  const { arena, id } = attested();
  const seg = arena.describe(id);
  t.deepEqual([0, 1, 2, 3].map((i) => seg.attestationAt(i)), ["QUFB", "QUFB", undefined, "QkJC"]);
});

test("a segment's export carries the attestations stored with its units, and an import keeps them with the units", (t) => {
  const { arena, id } = attested();
  const bytes = arena.exportSegment(id);
  t.deepEqual(decodeSegment(bytes).attestations, ["QUFB", "QUFB", undefined, "QkJC"]);
  const dst = new Arena(small, new SimulatedClock());
  const got = dst.importSegment(bytes);
  t.deepEqual([0, 1, 2, 3].map((i) => dst.describe(got.segmentId).attestationAt(i)), ["QUFB", "QUFB", undefined, "QkJC"]);
});

test("a segment's attestations leave RAM with its units: none once it spilled (the spill record keeps them), none once it recycled", (t) => {
  const { arena, id } = attested();
  t.true(arena.markSpilled(id, evidence));
  t.is(arena.describe(id).attestations, undefined);
  const other = attested();
  const seg = other.arena.describe(other.id);
  t.true(other.arena.discard(other.id));
  t.is(seg.attestations, undefined);
});
