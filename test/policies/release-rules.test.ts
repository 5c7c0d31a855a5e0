import test from "ava";
import { RangeSet } from "../../lanes/range-set.ts";
import { authorizeReleases, evaluateScenario, UnknownReferenceError, withReleases } from "../../policies/index.ts";
import { exampleState } from "./worked-example-fixture.ts";

const drop = (holder: string, first: number, last: number) => ({ holder, lane: "l0", ranges: RangeSet.of(first, last) });

// With Europe persisted through 118 the waypoint's 116-118 are otherwise releasable; each row adds one obstacle.
const persisted = (j: any) => {
  j.holders.find((h: any) => h.id === "europe").claims[0].ranges = [[101, 118]];
};
const table: { title: string; edit: (j: any) => void; reason: string }[] = [
  {
    title: "a retention window still open on the range",
    edit: (j) => {
      j.holders.find((h: any) => h.id === "waypoint").claims[0].retainUntilMs = j.asOfMs + 1;
    },
    reason: "retention_window",
  },
  {
    title: "a PITR pin on the range at that holder",
    edit: (j) => {
      j.pins = [{ id: "pitr-117", holder: "waypoint", lane: "l0", ranges: [[117, 117]] }];
    },
    reason: "pitr_pin",
  },
  {
    title: "a recovery in flight reading the range",
    edit: (j) => {
      j.recoveries = [{ id: "rec-1", lane: "l0", ranges: [[110, 116]], sources: ["waypoint"] }];
    },
    reason: "recovery_in_flight",
  },
];
for (const row of table) {
  test(`a release is refused while ${row.title}, even with qualified replacement coverage`, (t) => {
    const state = exampleState((j) => {
      persisted(j);
      row.edit(j);
    });
    const [d] = authorizeReleases(state, [drop("waypoint", 116, 118)]);
    t.false(d!.allowed);
    t.deepEqual(d!.reasons, [row.reason]);
  });
}

test("a holder cannot release ranges it does not retain", (t) => {
  const [d] = authorizeReleases(exampleState(persisted), [drop("waypoint", 116, 119)]);
  t.false(d!.allowed);
  t.true(d!.reasons.includes("not_retained"));
});

test("a release with no successor copy is refused even when no scenario's cut depends on it yet", (t) => {
  // 121-125 are received but not yet acknowledged to the writer: only the waypoint has them.
  const state = exampleState((j) => {
    j.holders.find((h: any) => h.id === "waypoint").claims[0].ranges = [[112, 125]];
  });
  const [d] = authorizeReleases(state, [drop("waypoint", 121, 125)]);
  t.false(d!.allowed);
  t.deepEqual(d!.reasons, ["no_successor"]);
  t.deepEqual(d!.scenarios, []);
});

test("two holders asking together can never both release relying on each other", (t) => {
  // A second independent colo also holds 112-118: the East+West cut can rely on either, not on neither.
  const state = exampleState((j) => {
    j.sites.push({ id: "nj-waypoint-2", region: "colo-pa", az: "colo-pa-a", host: "pa-h1", deps: [] });
    j.holders.push({ id: "waypoint-2", site: "nj-waypoint-2", claims: [{ lane: "l0", ranges: [[112, 118]], residency: "ram", evidence: { kind: "observed", atMs: j.asOfMs } }] });
  });
  const decisions = authorizeReleases(state, [drop("waypoint", 116, 118), drop("waypoint-2", 116, 118)]);
  t.deepEqual(decisions.map((d) => d.allowed), [true, false]);
  t.deepEqual(decisions[1]!.scenarios, ["US-East and US-West lost"]);
  // And applying the granted one keeps every required cut.
  const after = withReleases(state, decisions.filter((d) => d.allowed).map((d) => d.request));
  const ew = state.scenarios.find((s) => s.name === "US-East and US-West lost")!;
  t.deepEqual(evaluateScenario(after, ew).cut, { l0: 118 });
});

test("moving RAM custody to another host in the same AZ adds no AZ diversity", (t) => {
  // The same-AZ RAM holder's data is "transferred" to a new host in the same AZ; the AZ-loss cut
  // still depends entirely on the other-AZ holder, so that one may not release.
  const state = exampleState((j) => {
    j.sites.push({ id: "use1-ram-c", region: "us-east", az: "use1-az1", host: "use1-h3", deps: [] });
    j.holders.push({ id: "ram-same-az-2", site: "use1-ram-c", claims: [{ lane: "l0", ranges: [[110, 120]], residency: "ram", evidence: { kind: "observed", atMs: j.asOfMs } }] });
  });
  const [d] = authorizeReleases(state, [drop("ram-other-az", 119, 120)]);
  t.false(d!.allowed);
  t.true(d!.scenarios.includes("AZ use1-az1 lost"));
});

test("an unknown holder in a release request is a typed error", (t) => {
  t.throws(() => authorizeReleases(exampleState(), [drop("ghost", 1, 2)]), { instanceOf: UnknownReferenceError });
});
