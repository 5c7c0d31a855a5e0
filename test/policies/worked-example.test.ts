import test from "ava";
import { RangeSet } from "../../lanes/range-set.ts";
import { authorizeReleases, evaluateState, evaluateScenario, type EvaluationState } from "../../policies/index.ts";
import { EAST_AND_WEST, exampleState } from "./worked-example-fixture.ts";

function report(state: EvaluationState, name: string) {
  const r = evaluateState(state).reports.find((x) => x.name === name);
  if (!r) throw new Error(`no report ${name}`);
  return r;
}

// The memo's worked example, scenario by scenario: surviving cut and lost committed ranges.
const table: { scenario: string; cut: number; lost: [number, number][]; contributors: string[] }[] = [
  { scenario: "writer host crash", cut: 120, lost: [], contributors: ["writer"] },
  { scenario: "AZ use1-az1 lost", cut: 120, lost: [], contributors: ["europe", "ram-other-az"] },
  { scenario: "US-East power loss", cut: 120, lost: [], contributors: ["writer"] },
  { scenario: "US-East lost", cut: 119, lost: [[120, 120]], contributors: ["europe", "us-west"] },
  { scenario: EAST_AND_WEST, cut: 118, lost: [[119, 120]], contributors: ["europe", "waypoint"] },
];
for (const row of table) {
  test(`worked example: "${row.scenario}" survives through ${row.cut} and loses ${JSON.stringify(row.lost)}`, (t) => {
    const r = report(exampleState(), row.scenario);
    t.deepEqual(r.cut, { l0: row.cut });
    t.deepEqual(r.lost, { l0: row.lost });
    t.deepEqual(r.contributors, row.contributors);
  });
}

test("worked example: Europe recovers through 118 by combining its base and WAL with the waypoint's suffix", (t) => {
  const r = report(exampleState(), EAST_AND_WEST);
  t.is(r.base, "base-eu-100");
  t.is(r.destination, "euw1-store");
  t.deepEqual(r.cut, { l0: 118 });
  t.true(r.contributors.includes("waypoint"));
  t.is(r.lostSeqs, 2);
  t.is(r.lostBytes, 2 * 4 * 1024 * 1024);
});

test("worked example: without the waypoint, losing East and West loses 116-120 instead of 119-120", (t) => {
  const without = exampleState((j) => {
    j.holders = j.holders.filter((h: { id: string }) => h.id !== "waypoint");
    j.forwards = [];
  });
  const r = report(without, EAST_AND_WEST);
  t.deepEqual(r.cut, { l0: 115 });
  t.deepEqual(r.lost, { l0: [[116, 120]] });
  t.is(r.lostSeqs, 5);
});

test("worked example: receipt 119 from US-West does not authorize the waypoint to drop 116-118 when the contract includes losing East and West", (t) => {
  const state = exampleState();
  const [d] = authorizeReleases(state, [{ holder: "waypoint", lane: "l0", ranges: RangeSet.of(116, 118) }]);
  t.false(d!.allowed);
  t.deepEqual(d!.reasons, ["scenario_below_cut"]);
  t.deepEqual(d!.scenarios, [EAST_AND_WEST]);
});

test("worked example: the same drop is authorized when the contract only covers losing East (West's receipt 119 suffices)", (t) => {
  const state = exampleState((j) => {
    for (const s of j.scenarios) if (s.name === EAST_AND_WEST) s.required = false;
  });
  const [d] = authorizeReleases(state, [{ holder: "waypoint", lane: "l0", ranges: RangeSet.of(116, 118) }]);
  t.true(d!.allowed);
});

test("worked example: once Europe has persisted 116-118 the waypoint may release them without ever persisting them", (t) => {
  const state = exampleState((j) => {
    j.holders.find((h: { id: string }) => h.id === "europe").claims[0].ranges = [[101, 118]];
  });
  const [d] = authorizeReleases(state, [{ holder: "waypoint", lane: "l0", ranges: RangeSet.of(116, 118) }]);
  t.true(d!.allowed);
  t.deepEqual(d!.reasons, []);
  // and the East+West cut is unchanged by it
  t.deepEqual(evaluateScenario(state, state.scenarios.find((s) => s.name === EAST_AND_WEST)!).cut, { l0: 118 });
});

test("worked example: time to usable in Europe after losing East is detect + authorize + acquire + missing bytes / bandwidth + persist + validate", (t) => {
  const r = report(exampleState(), "US-East lost");
  // Europe lacks 116-119 (4 × 4 MiB); US-West sends them over its 200 MB/s link (widest path).
  t.deepEqual(r.timeToUsable, {
    detectSec: 30,
    authorizeSec: 10,
    acquireCapacitySec: 60,
    transferSec: (4 * 4 * 1024 * 1024) / 200e6,
    persistSec: 20,
    validateSec: 30,
    missingBytes: 4 * 4 * 1024 * 1024,
    totalSec: 150 + (4 * 4 * 1024 * 1024) / 200e6,
  });
  t.true(r.meetsDeadline);
});

test("worked example: losing the AZ that holds the writer and the same-AZ RAM holder is covered by the other-AZ RAM holder", (t) => {
  const r = report(exampleState(), "AZ use1-az1 lost");
  t.deepEqual(r.cut, { l0: 120 });
  t.is(r.oldestLostAgeMs, 0);
  const noOtherAz = exampleState((j) => {
    j.holders = j.holders.filter((h: { id: string }) => h.id !== "ram-other-az");
  });
  // Without it the waypoint (through 118) and US-West (through 119) are the freshest survivors.
  t.deepEqual(report(noOtherAz, "AZ use1-az1 lost").cut, { l0: 119 });
});

test("worked example: a sequential timeline counts the waypoint's forward to Europe that completed before the next loss", (t) => {
  const r = report(exampleState(), "East, then West, then waypoint (60 s apart)");
  t.is(r.kind, "timeline");
  t.deepEqual(r.cut, { l0: 118 });
  t.deepEqual(r.contributors, ["europe"]);
});

test("worked example: a forward still in flight when the waypoint is lost does not count", (t) => {
  const late = exampleState((j) => {
    j.forwards[0].completesAfterSec = 200; // after the waypoint is lost at 120 s
  });
  t.deepEqual(report(late, "East, then West, then waypoint (60 s apart)").cut, { l0: 115 });
  const between = exampleState((j) => {
    j.forwards[0].completesAfterSec = 90; // between West (60 s) and the waypoint (120 s)
  });
  t.deepEqual(report(between, "East, then West, then waypoint (60 s apart)").cut, { l0: 118 });
});

test("worked example: losing East and West blocks writable activation (metadata quorum 2 of 3) even though the payload survives", (t) => {
  const r = report(exampleState(), EAST_AND_WEST);
  t.true(r.flags.includes("writable_activation_blocked"));
  t.false(report(exampleState(), "US-East lost").flags.includes("writable_activation_blocked"));
});

test("worked example: a partitioned waypoint still holds surviving data but recovery time is unbounded", (t) => {
  const r = report(exampleState(), "East+West lost, waypoint cut off");
  t.deepEqual(r.cut, { l0: 118 });
  t.is(r.timeToUsable, null);
  t.true(r.flags.includes("isolated_holder"));
  t.false(r.meetsDeadline);
});
