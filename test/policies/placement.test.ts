import test from "ava";
import { readFileSync } from "node:fs";
import { InfeasiblePlacementError, parsePlacementInput, placeCustody, PolicyInputError, type PlacementInput } from "../../policies/index.ts";
import { CANDIDATES_PATH } from "./worked-example-fixture.ts";

const raw = () => JSON.parse(readFileSync(CANDIDATES_PATH, "utf8"));
const input = (edit: (j: any) => void = () => {}): PlacementInput => {
  const j = raw();
  edit(j);
  return parsePlacementInput(j);
};

test("placement on the worked example meets every required scenario and reports each shape it compared", (t) => {
  const r = placeCustody(input());
  t.true(r.chosen.meetsContract);
  t.true(r.chosen.scenarios.filter((s) => s.required).every((s) => s.covered));
  t.true(r.chosen.holders.length >= 1 && r.chosen.holders.length <= 5);
  for (const g of Object.values(r.byShape)) t.true(g!.monthlyUsd >= r.chosen.monthlyUsd);
  t.truthy(r.byShape.parallel);
  t.truthy(r.byShape.waypoint);
});

test("placement uses the nearby waypoint so losing East and West keeps a 1.5 ms tail", (t) => {
  const r = placeCustody(input());
  t.true(r.chosen.holders.includes("waypoint"));
  const ew = r.chosen.scenarios.find((s) => s.name === "US-East and US-West lost")!;
  t.is(ew.lagMs, 1.5); // 2 ms RTT / 2 + 0.5 ms jitter; a recovery store's base supplies the rest
});

test("a holder fed through another counts that holder and its path as dependencies", (t) => {
  const r = placeCustody(input());
  const fed = Object.entries(r.chosen.feedDependencies).find(([, d]) => d.some((x) => x.startsWith("holder:")));
  t.truthy(fed, "the chosen graph forwards through a waypoint");
  t.true(fed![1].includes("holder:waypoint"));
  t.true(fed![1].includes("link:nj-metro"));
});

test("transfer once across the expensive boundary, then fan out locally", (t) => {
  // Two European copies are required (losing East plus one European AZ). The cheapest graph
  // crosses the Atlantic once and fans out inside eu-west over the $0.01 cross-AZ edge.
  const r = placeCustody(
    input((j) => {
      j.candidates = j.candidates.filter((c: any) => ["europe", "europe-b"].includes(c.id));
      j.contract.scenarios = [
        { name: "East lost", losses: [{ domain: "region:us-east", kind: "site_destruction" }], maxLagMs: 100 },
        { name: "East + euw1-az1 lost", losses: [{ domain: "region:us-east", kind: "site_destruction" }, { domain: "az:euw1-az1", kind: "site_destruction" }], maxLagMs: 100 },
        { name: "East + euw1-az2 lost", losses: [{ domain: "region:us-east", kind: "site_destruction" }, { domain: "az:euw1-az2", kind: "site_destruction" }], maxLagMs: 100 },
      ];
    }),
  );
  t.is(r.chosen.shape, "waypoint");
  t.deepEqual(r.chosen.holders, ["europe", "europe-b"]);
  const transatlantic = r.chosen.edges.filter((e) => e.from === "source");
  t.is(transatlantic.length, 1);
  t.true(r.byShape.parallel!.monthlyUsd > r.chosen.monthlyUsd); // two transatlantic legs cost more
  const fanned = r.chosen.edges.find((e) => e.from !== "source")!;
  t.true(r.chosen.feedDependencies[fanned.to]!.includes(`holder:${fanned.from}`));
  t.true(r.chosen.feedDependencies[fanned.to]!.includes("link:transatlantic-1"));
});

test("a shared feed path cut before a loss leaves its downstream copies stale, so placement avoids it", (t) => {
  const scen = (intervalSec: number) =>
    input((j) => {
      j.candidates = j.candidates.filter((c: any) => ["europe", "waypoint"].includes(c.id));
      j.contract.scenarios = [
        { name: "transatlantic-1 cut, then East lost", preceding: { losses: [{ domain: "link:transatlantic-1", kind: "partition" }], intervalSec }, losses: [{ domain: "region:us-east", kind: "site_destruction" }], maxLagMs: 100 },
      ];
    });
  const r = placeCustody(scen(60));
  // Europe fed directly over transatlantic-1 would be 60 s behind; fed via the waypoint it stays current.
  t.deepEqual(r.chosen.edges.map((e) => `${e.from}->${e.to}`).sort(), ["source->waypoint", "waypoint->europe"]);
  t.true(r.chosen.scenarios[0]!.covered);
});

test("the same input always yields the same graph", (t) => {
  t.deepEqual(placeCustody(input()), placeCustody(input()));
});

test("no qualifying graph is a typed InfeasiblePlacementError", (t) => {
  const err = t.throws(() => placeCustody(input((j) => (j.contract.scenarios[1].maxLagMs = 0.01))), { instanceOf: InfeasiblePlacementError });
  t.is(err!.code, "infeasible_placement");
});

test("bad placement input names the field", (t) => {
  const e1 = t.throws(() => input((j) => (j.contract.maxHolders = 11)), { instanceOf: PolicyInputError });
  t.is(e1!.detail.field, "contract.maxHolders");
  const e2 = t.throws(() => placeCustody(input((j) => (j.candidates[1].site = "atlantis"))));
  t.is((e2 as PolicyInputError).detail.field, "candidates[1].site");
  const e3 = t.throws(() => placeCustody(input((j) => (j.edges[0].deps = ["cable:x"]))), { instanceOf: PolicyInputError });
  t.is(e3!.detail.field, "edges[0].deps[0]");
});
