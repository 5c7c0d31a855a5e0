import test from "ava";
import { evaluateScenario, parseEvaluationState, type EvaluationStateJson } from "../../policies/index.ts";
import { survivingRanges } from "../../policies/surviving-ranges.ts";

// The cut a scenario reports is the end of the contiguous prefix that survives from the base's
// cut onward, never the highest surviving sequence: a replica with a hole cannot be replayed past
// the hole. Until issue #21 only the simulator noticed a cut taken from the highest sequence.

const AS_OF = 1_800_000_000_000;
const lossOfSource = [{ domain: "site:src", kind: "site_destruction" as const }];

/** Writer at `src` acknowledged l0 through 30; `h2` keeps a base through 10 and `claims` survive at s2/s3. */
function stateWith(claims: Record<"h2" | "h3", [number, number][]>): EvaluationStateJson {
  const observed = { kind: "observed" as const, atMs: AS_OF };
  return {
    volume: "v",
    asOfMs: AS_OF,
    staleAfterMs: 60_000,
    source: { site: "src", lanes: { l0: 30 } },
    commits: [{ lane: "l0", first: 1, last: 30, committedAtMs: AS_OF - 1000, bytesPerSeq: 100 }],
    sites: [
      { id: "src", region: "r1", az: "a1", host: "h-src" },
      { id: "s2", region: "r1", az: "a2", host: "h-s2" },
      { id: "s3", region: "r1", az: "a3", host: "h-s3" },
    ],
    holders: [
      { id: "writer", site: "src", claims: [{ lane: "l0", ranges: [[1, 30]], residency: "disk", evidence: observed }] },
      { id: "h2", site: "s2", claims: claims.h2.length ? [{ lane: "l0", ranges: claims.h2, residency: "disk", evidence: observed }] : [] },
      { id: "h3", site: "s3", claims: claims.h3.length ? [{ lane: "l0", ranges: claims.h3, residency: "disk", evidence: observed }] : [] },
    ],
    bases: [{ id: "base-10", holder: "h2", cut: { l0: 10 }, bytes: 1000 }],
    keyAuthorities: [{ id: "kms", site: "s3" }],
    recovery: { destination: "s2", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
    scenarios: [{ name: "source lost", losses: lossOfSource, deadlineSec: 600 }],
  };
}

function cutOf(claims: Record<"h2" | "h3", [number, number][]>) {
  const state = parseEvaluationState(stateWith(claims));
  return { report: evaluateScenario(state, state.scenarios[0]!), surviving: survivingRanges(state, lossOfSource, "l0") };
}

test("a hole in the surviving ranges ends the cut at the hole, not at the highest surviving sequence", (t) => {
  const { report, surviving } = cutOf({ h2: [[11, 15], [17, 30]], h3: [] });
  t.is(surviving.toString(), "0-15,17-30", "sequences 17-30 do survive");
  t.deepEqual(report.cut, { l0: 15 });
  t.deepEqual(report.lost, { l0: [[16, 30]] }, "everything above the hole is lost: it cannot be replayed");
  t.is(report.lostSeqs, 15);
});

test("a hole right after the base leaves the base's own cut", (t) => {
  const { report } = cutOf({ h2: [[12, 30]], h3: [] });
  t.deepEqual(report.cut, { l0: 10 });
  t.deepEqual(report.lost, { l0: [[11, 30]] });
});

test("the contiguous prefix may run across holders: one holder's hole filled by another extends the cut", (t) => {
  const filled = cutOf({ h2: [[11, 15], [17, 30]], h3: [[16, 16]] }).report;
  t.deepEqual(filled.cut, { l0: 30 });
  t.deepEqual(filled.lost, { l0: [] });
  t.deepEqual(filled.contributors, ["h2", "h3"]);
});

test("with several holes the cut stops at the first one above the base", (t) => {
  const { report } = cutOf({ h2: [[11, 13], [15, 20], [25, 30]], h3: [[21, 23]] });
  t.deepEqual(report.cut, { l0: 13 });
  t.deepEqual(report.lost, { l0: [[14, 30]] });
});
