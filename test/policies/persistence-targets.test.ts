import test from "ava";
import fc from "fast-check";
import { choosePersistenceTargets, type Loss, type Site } from "../../policies/index.ts";

const site = (id: string, region: string, az: string): Site => ({ id, region, az, host: `host-${id}`, deps: [] });
const SITES = [site("e1", "us-east", "use1-a"), site("e2", "us-east", "use1-b"), site("w1", "us-west", "usw2-a"), site("eu1", "eu", "euw1-a")];
const power = (region: string): Loss => ({ domain: `region:${region}`, kind: "power_loss" });
const destroyed = (domain: string): Loss => ({ domain, kind: "site_destruction" });

test("one persisted copy per scenario that no RAM copy survives: a region's power loss with every holder in it needs one target there, not one per holder", (t) => {
  const r = choosePersistenceTargets({
    sites: SITES,
    laneHolders: { d1: "e1", d2: "e2" },
    candidates: ["d2", "d1"],
    scenarios: [{ name: "us-east power loss", losses: [power("us-east")] }],
  });
  t.deepEqual(r, { targets: ["d1"], covered: ["us-east power loss"], uncovered: [] });
  // Two copies asked for: both.
  t.deepEqual(choosePersistenceTargets({ sites: SITES, laneHolders: { d1: "e1", d2: "e2" }, candidates: ["d1", "d2"], scenarios: [{ name: "p", losses: [power("us-east")] }], copies: 2 }).targets, ["d1", "d2"]);
});

test("a scenario some RAM copy survives needs no disk; a destroyed or unreachable disk keeps nothing, so such a scenario stays uncovered", (t) => {
  const base = { sites: SITES, laneHolders: { d1: "e1", d2: "e2", m: "w1" }, candidates: ["d1", "d2"] };
  // m (us-west, RAM) survives the east power loss: nothing to choose, no choice is made.
  t.deepEqual(choosePersistenceTargets({ ...base, scenarios: [{ name: "east power", losses: [power("us-east")] }] }), { targets: [], covered: [], uncovered: [] });
  // East destroyed and west powered off: no RAM survives, and no candidate's disk either.
  const r = choosePersistenceTargets({ ...base, scenarios: [{ name: "east gone, west dark", losses: [destroyed("region:us-east"), power("us-west")] }] });
  t.deepEqual(r, { targets: [], covered: [], uncovered: ["east gone, west dark"] });
});

test("the candidate serving the most scenarios comes first; on a tie a current target is kept, so choices do not flap", (t) => {
  const laneHolders = { d1: "e1", d2: "e2", dw: "w1" };
  const scenarios = [
    { name: "all dark", losses: [power("us-east"), power("us-west")] },
    { name: "east dark, west gone", losses: [power("us-east"), destroyed("region:us-west")] },
    { name: "west dark, e1 gone", losses: [power("us-west"), destroyed("az:use1-a"), power("us-east")] },
  ];
  // d2 serves all three (e1 is destroyed in the third, w1 in the second): it alone is enough.
  t.deepEqual(choosePersistenceTargets({ sites: SITES, laneHolders, candidates: ["d1", "d2", "dw"], scenarios }).targets, ["d2"]);
  const tie = { sites: SITES, laneHolders: { d1: "e1", d2: "e2" }, candidates: ["d1", "d2"], scenarios: [{ name: "p", losses: [power("us-east")] }] };
  t.deepEqual(choosePersistenceTargets(tie).targets, ["d1"]);
  t.deepEqual(choosePersistenceTargets({ ...tie, current: ["d2"] }).targets, ["d2"]);
});

test("property: every covered scenario keeps the asked copies among targets whose disks it spares, every target serves some scenario, and uncovered ones could not be served by anyone", (t) => {
  const holderIds = ["a", "b", "c", "d", "e"];
  const lossArb = fc.record({
    domain: fc.constantFrom("region:us-east", "region:us-west", "region:eu", "az:use1-a", "az:use1-b"),
    kind: fc.constantFrom("partition" as const, "crash" as const, "power_loss" as const, "site_destruction" as const),
  });
  fc.assert(
    fc.property(
      fc.dictionary(fc.constantFrom(...holderIds), fc.constantFrom(...SITES.map((s) => s.id)), { minKeys: 1 }),
      fc.array(fc.record({ name: fc.string({ minLength: 1, maxLength: 6 }), losses: fc.array(lossArb, { minLength: 1, maxLength: 3 }) }), { maxLength: 4 }),
      fc.integer({ min: 1, max: 3 }),
      (laneHolders, raw, copies) => {
        const scenarios = raw.map((s, i) => ({ ...s, name: `${i}:${s.name}` }));
        const candidates = Object.keys(laneHolders).filter((_, i) => i % 2 === 0);
        const r = choosePersistenceTargets({ sites: SITES, laneHolders, candidates, scenarios, copies });
        const kindAt = (siteId: string, losses: readonly Loss[]) => {
          const s = SITES.find((x) => x.id === siteId)!;
          const order = ["partition", "crash", "power_loss", "site_destruction"];
          let worst = -1;
          for (const l of losses) if (l.domain === `region:${s.region}` || l.domain === `az:${s.az}`) worst = Math.max(worst, order.indexOf(l.kind));
          return worst < 0 ? undefined : order[worst];
        };
        const serves = (c: string, losses: readonly Loss[]) => ["crash", "power_loss"].includes(kindAt(laneHolders[c]!, losses) ?? "");
        for (const s of scenarios) {
          const needs = Object.values(laneHolders).every((site) => kindAt(site, s.losses) !== undefined);
          const served = r.targets.filter((c) => serves(c, s.losses)).length;
          if (!needs) t.false(r.covered.includes(s.name) || r.uncovered.includes(s.name));
          else if (r.covered.includes(s.name)) t.true(served >= copies);
          else {
            t.true(r.uncovered.includes(s.name));
            t.true(candidates.filter((c) => serves(c, s.losses)).length < copies);
          }
        }
        for (const c of r.targets) t.true(candidates.includes(c) && scenarios.some((s) => r.covered.concat(r.uncovered).includes(s.name) && serves(c, s.losses)));
      },
    ),
    { numRuns: 300 },
  );
});
