import test from "ava";
import { Counters } from "../../core/counters.ts";
import { isCustodyError } from "../../core/custody-error.ts";
import { applyLosses, initialView, evaluateScenario, evaluateState, evaluateTimeline, parseEvaluationState, PolicyInputError } from "../../policies/index.ts";
import { exampleJson, exampleState } from "./worked-example-fixture.ts";

const HOUR = 3_600_000;
const scenario = (name: string, losses: { domain: string; kind: "crash" | "power_loss" | "site_destruction" | "partition" }[]) => ({
  name,
  losses,
  deadlineSec: 900,
  required: true,
});

test("a host crash loses the RAM copy but keeps the disk copy on that host", (t) => {
  const s = exampleState((j) => {
    j.holders.find((h: any) => h.id === "ram-other-az").claims.push({
      lane: "l0", ranges: [[100, 109]], residency: "disk", evidence: { kind: "observed", atMs: j.asOfMs },
    });
  });
  const view = applyLosses(s, initialView(s), [{ domain: "host:use1-h7", kind: "crash" }]);
  const kept = view.claims.filter((c) => c.holder === "ram-other-az");
  t.deepEqual(kept.map((c) => [c.claim.residency, c.claim.ranges.toString()]), [["disk", "100-109"]]);
  // the other holders are untouched
  t.is(view.claims.length, s.holders.reduce((n, h) => n + h.claims.length, 0) - 1);
});

test("power loss keeps protected RAM only with valid, fresh evidence and flags unproven protection", (t) => {
  const withProtected = (valid: boolean, ageMs: number) =>
    exampleState((j) => {
      const c = j.holders.find((h: any) => h.id === "ram-other-az").claims[0];
      c.residency = "protected_ram";
      c.protectedRamValid = valid;
      c.evidence.atMs = j.asOfMs - ageMs;
      j.holders = j.holders.filter((h: any) => h.id !== "writer");
      j.bases = j.bases.filter((b: any) => b.holder !== "writer");
    });
  const power = scenario("power", [{ domain: "region:us-east", kind: "power_loss" }]);
  const good = evaluateScenario(withProtected(true, 100), power);
  t.deepEqual(good.cut, { l0: 120 });
  t.false(good.flags.includes("protected_ram_unproven"));
  const invalid = evaluateScenario(withProtected(false, 100), power);
  t.deepEqual(invalid.cut, { l0: 119 });
  t.true(invalid.flags.includes("protected_ram_unproven"));
  const stale = evaluateScenario(withProtected(true, 60_000), power);
  t.deepEqual(stale.cut, { l0: 119 });
  t.true(stale.flags.includes("protected_ram_unproven"));
});

test("site destruction loses disk copies too", (t) => {
  const s = exampleState();
  const r = evaluateScenario(s, scenario("west gone", [{ domain: "site:usw2-store", kind: "site_destruction" }, { domain: "region:us-east", kind: "site_destruction" }]));
  t.false(r.contributors.includes("us-west"));
  t.deepEqual(r.cut, { l0: 118 });
});

test("a loss of a dependency tag reaches every site carrying it (shared provider account)", (t) => {
  const r = evaluateScenario(exampleState(), scenario("account", [{ domain: "account:aws-prod", kind: "site_destruction" }]));
  // Only the colo waypoint (own account) survives, and the only bases were on aws-prod sites.
  t.is(r.cut, null);
  t.true(r.flags.includes("no_base"));
  t.deepEqual(r.lost, { l0: [[0, 120]] });
});

test("without an authorized key path nothing is recoverable even though ciphertext and base survive", (t) => {
  const s = exampleState((j) => {
    j.keyAuthorities = [{ id: "kms-us-east", site: "use1-writer" }];
  });
  const r = evaluateScenario(s, scenario("east", [{ domain: "region:us-east", kind: "site_destruction" }]));
  t.is(r.cut, null);
  t.true(r.flags.includes("no_key_path"));
  t.is(r.keyAuthority, null);
});

test("a WAL-only survivor cannot recover when the only base was in the destroyed region", (t) => {
  const s = exampleState((j) => {
    j.bases = j.bases.filter((b: any) => b.holder === "writer");
  });
  const r = evaluateScenario(s, scenario("east", [{ domain: "region:us-east", kind: "site_destruction" }]));
  t.is(r.cut, null);
  t.true(r.flags.includes("no_base"));
});

test("an idle, fully covered volume shows zero lost age however old its last write is", (t) => {
  const s = exampleState((j) => {
    j.asOfMs += 24 * HOUR;
    j.staleAfterMs = 48 * HOUR;
  });
  const r = evaluateScenario(s, scenario("host", [{ domain: "host:use1-h2", kind: "crash" }]));
  t.deepEqual(r.lost, { l0: [] });
  t.is(r.oldestLostAgeMs, 0);
});

test("the age of lost work comes from the source commit timestamp of the oldest lost sequence", (t) => {
  const s = exampleState((j) => {
    j.asOfMs += HOUR;
    j.staleAfterMs = 2 * HOUR;
  });
  const r = evaluateScenario(s, scenario("east+west", [{ domain: "region:us-east", kind: "site_destruction" }, { domain: "region:us-west", kind: "site_destruction" }]));
  t.deepEqual(r.lost, { l0: [[119, 120]] });
  t.is(r.oldestLostAgeMs, HOUR + 3000); // 119 was committed 3 s before the original snapshot
});

test("evidence is labelled observed, stale or admitted_bound", (t) => {
  const east = scenario("east+west", [{ domain: "region:us-east", kind: "site_destruction" }, { domain: "region:us-west", kind: "site_destruction" }]);
  t.is(evaluateScenario(exampleState(), east).evidence, "observed");
  const stale = exampleState((j) => {
    j.holders.find((h: any) => h.id === "waypoint").claims[0].evidence.atMs = j.asOfMs - 60_000;
  });
  t.is(evaluateScenario(stale, east).evidence, "stale");
  const bound = exampleState((j) => {
    j.holders.find((h: any) => h.id === "waypoint").claims[0].evidence.kind = "admitted_bound";
  });
  t.is(evaluateScenario(bound, east).evidence, "admitted_bound");
});

test("a cut across lanes needs a surviving consistency manifest", (t) => {
  const twoLanes = (manifest: boolean) =>
    exampleState((j) => {
      j.source.lanes.l1 = 60;
      for (const b of j.bases) b.cut.l1 = 50;
      for (const h of j.holders) h.claims.push({ ...h.claims[0], lane: "l1", ranges: [[51, 60]] });
      j.commits.push({ lane: "l1", first: 51, last: 60, committedAtMs: j.asOfMs - 1000, bytesPerSeq: 1 });
      if (manifest) j.manifests = [{ id: "m-118-58", cut: { l0: 118, l1: 58 }, holders: ["europe"] }];
    });
  const east = scenario("east+west", [{ domain: "region:us-east", kind: "site_destruction" }, { domain: "region:us-west", kind: "site_destruction" }]);
  const without = evaluateScenario(twoLanes(false), east);
  t.deepEqual(without.cut, { l0: 100, l1: 50 }); // only the base itself is a consistent cut
  const withM = evaluateScenario(twoLanes(true), east);
  t.deepEqual(withM.cut, { l0: 118, l1: 58 });
  t.is(withM.manifest, "m-118-58");
});

test("a timeline whose steps are closer than its minimum interval is rejected naming the field", (t) => {
  const s = exampleState();
  const tl = { ...s.timelines[0]!, events: s.timelines[0]!.events.map((e, i) => (i === 1 ? { ...e, afterSec: 10 } : e)) };
  const err = t.throws(() => evaluateTimeline(s, tl, "timelines[0]"), { instanceOf: PolicyInputError });
  t.is(err!.detail.field, "timelines[0].events[1].afterSec");
});

test("bad state input gets a typed error naming the field, is counted, and nothing is evaluated", (t) => {
  const counters = new Counters();
  const j = exampleJson();
  j.holders[2].claims[0].residency = "tape";
  const err = t.throws(() => parseEvaluationState(j, counters), { instanceOf: PolicyInputError });
  t.is(err!.detail.field, "holders[2].claims[0].residency");
  t.is(counters.get("invalid_policy_input"), 1);
  const j2 = exampleJson();
  j2.bases[0].holder = "nobody";
  const err2 = t.throws(() => parseEvaluationState(j2, counters));
  t.true(isCustodyError(err2, "unknown_policy_reference"));
  t.is((err2 as PolicyInputError).detail.field, "bases[0].holder");
  t.is(counters.get("unknown_policy_reference"), 1);
});

test("a cluster placement group spanning two AZs is rejected: it is never another AZ", (t) => {
  const j = exampleJson();
  j.sites[0].placementGroup = "pg-1";
  j.sites[2].placementGroup = "pg-1";
  const err = t.throws(() => parseEvaluationState(j), { instanceOf: PolicyInputError });
  t.is(err!.detail.field, "sites[2].placementGroup");
});

test("evaluation is the same for the same input (no clock, no randomness)", (t) => {
  t.deepEqual(evaluateState(exampleState()), evaluateState(exampleState()));
});

test("a lost destination makes recovery time unbounded without calling the survivors isolated", (t) => {
  const r = evaluateScenario(exampleState(), { ...scenario("europe gone", [{ domain: "region:eu-west", kind: "site_destruction" }]), destination: "euw1-store" });
  t.deepEqual(r.cut, { l0: 120 });
  t.is(r.timeToUsable, null);
  t.true(r.flags.includes("destination_lost"));
  t.false(r.flags.includes("isolated_holder"));
  // the same loss with a surviving destination is bounded
  const west = evaluateScenario(exampleState(), { ...scenario("europe gone", [{ domain: "region:eu-west", kind: "site_destruction" }]), destination: "usw2-store" });
  t.not(west.timeToUsable, null);
});

test("the surviving cut is the end of the contiguous prefix: with sequence 111 missing everywhere it is 110, not the highest surviving sequence", (t) => {
  const s = exampleState((j) => {
    for (const h of j.holders) for (const c of h.claims) {
      c.ranges = c.ranges.flatMap(([a, b]: number[]) => (a! <= 111 && b! >= 111 ? [[a, 110], [112, b]].filter(([x, y]) => x! <= y!) : [[a, b]]));
    }
    j.forwards = [];
  });
  for (const r of evaluateState(s).reports) {
    t.deepEqual(r.cut, { l0: 110 }, r.name);
    t.deepEqual(r.lost, { l0: [[111, 120]] }, `${r.name}: 112-120 survive somewhere but cannot be applied past the hole`);
    t.is(r.lostSeqs, 10);
    t.is(r.verdict, "not_met");
  }
});

test("a scenario without an allowed loss allows none; each stated limit is checked on its own", (t) => {
  const lostOne = evaluateState(exampleState()).reports.find((r) => r.name === "US-East lost")!;
  t.is(lostOne.verdict, "not_met");
  t.deepEqual(lostOne.reasons, ["loses 1 acknowledged write, 0 allowed"]);
  const allow = (allowedLoss: object) => evaluateState(exampleState((j) => (j.scenarios.find((x: any) => x.name === "US-East lost").allowedLoss = allowedLoss))).reports.find((r) => r.name === "US-East lost")!;
  t.is(allow({ seqs: 1 }).verdict, "met");
  t.is(allow({ ageSec: 10 }).verdict, "met", "only age is limited: 1.0 s is within 10 s");
  t.deepEqual(allow({ ageSec: 0.5 }).reasons, ["oldest lost write is 1.0 s old, 0.5 s allowed"]);
  t.deepEqual(allow({ seqs: 5, bytes: 1 }).reasons, ["loses 4194304 bytes, 1 allowed"]);
});
