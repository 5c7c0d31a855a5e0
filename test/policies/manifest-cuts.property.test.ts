import test from "ava";
import fc from "fast-check";
import { RangeSet } from "../../lanes/range-set.ts";
import { applyLosses, evaluateScenario, evaluateState, initialView, manifestSurvives, type ConsistencyManifest, type EvaluationState, type Holder, type LossKind, type Residency } from "../../policies/index.ts";

// Random two-lane states: holders at six sites each claim some ranges of lane a and/or b; bases
// and manifests name cuts across both lanes, kept on disk or in RAM by some holders.
const SITES = ["r1-a1-h1", "r1-a1-h2", "r1-a2-h1", "r2-a1-h1", "r2-a2-h1", "r2-a2-h2"].map((id) => {
  const [r, a] = id.split("-");
  return { id, region: r!, az: `${r}-${a}`, host: id, deps: [`power:${r}-${a}`] };
});
const ACKED = 30;
const LANES = ["a", "b"] as const;
const seqArb = fc.integer({ min: 0, max: ACKED });
const rangesArb = fc.array(fc.tuple(seqArb, fc.integer({ min: 0, max: 15 })), { minLength: 1, maxLength: 2 }).map((rs) => rs.map(([x, n]) => [x, Math.min(ACKED, x + n)] as [number, number]));
const claimArb = fc.record({ lane: fc.constantFrom(...LANES), ranges: rangesArb, residency: fc.constantFrom<Residency>("ram", "disk", "protected_ram") });
const holderArb = fc.record({ site: fc.constantFrom(...SITES.map((s) => s.id)), claims: fc.array(claimArb, { minLength: 1, maxLength: 3 }) });
const cutArb = fc.record({ a: seqArb, b: seqArb });
const manifestArb = fc.record({ cut: cutArb, holders: fc.array(fc.nat(7), { minLength: 1, maxLength: 2 }), residency: fc.constantFrom<"ram" | "disk" | undefined>("ram", "disk", undefined) });
const lossArb = fc.record({
  domain: fc.constantFrom("region:r1", "region:r2", "az:r1-a1", "az:r2-a2", "host:r1-a1-h1", "power:r2-a1", "site:r2-a2-h2"),
  kind: fc.constantFrom<LossKind>("crash", "power_loss", "site_destruction", "partition"),
});

function buildState(hs: { site: string; claims: { lane: string; ranges: [number, number][]; residency: Residency }[] }[], bases: { holder: number; cut: { a: number; b: number } }[], manifests: ConsistencyManifest[], losses: { domain: string; kind: LossKind }[][]): EvaluationState {
  const holders: Holder[] = hs.map((h, i) => ({
    id: `h${i}`,
    site: h.site,
    claims: h.claims.map((c) => ({ lane: c.lane, ranges: RangeSet.from(c.ranges), residency: c.residency, protectedRamValid: true, evidence: { kind: "observed" as const, atMs: 1000 } })),
  }));
  return {
    volume: "v",
    asOfMs: 2000,
    staleAfterMs: 10_000,
    source: { site: "r1-a1-h1", lanes: { a: ACKED, b: ACKED } },
    commits: LANES.map((lane) => ({ lane, first: 0, last: ACKED, committedAtMs: 500, bytesPerSeq: 100 })),
    sites: SITES,
    holders,
    bases: bases.map((b, i) => ({ id: `b${i}`, holder: holders[b.holder % holders.length]!.id, cut: b.cut, bytes: 1000 })),
    manifests,
    keyAuthorities: [{ id: "k1", site: "r1-a2-h1" }, { id: "k2", site: "r2-a1-h1" }],
    links: SITES.slice(1).map((s, i) => ({ id: `l${i}`, from: SITES[0]!.id, to: s.id, bandwidthBytesPerSec: 1e6, deps: [] })),
    recovery: { destination: "r2-a1-h1", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
    forwards: [],
    pins: [],
    recoveries: [],
    scenarios: losses.map((l, i) => ({ name: `s${i}`, losses: l, deadlineSec: 100, required: true })),
    timelines: [],
  };
}

const stateArb = fc
  .record({
    holders: fc.array(holderArb, { minLength: 1, maxLength: 6 }),
    bases: fc.array(fc.record({ holder: fc.nat(5), cut: fc.record({ a: fc.integer({ min: 0, max: 10 }), b: fc.integer({ min: 0, max: 10 }) }) }), { minLength: 1, maxLength: 2 }),
    manifests: fc.array(manifestArb, { maxLength: 5 }),
    scenarios: fc.array(fc.array(lossArb, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 3 }),
  })
  .map(({ holders, bases, manifests, scenarios }) => {
    const ms = manifests.map((m, i) => ({ id: `m${i}`, cut: m.cut, holders: [...new Set(m.holders.map((h) => `h${h % holders.length}`))], residency: m.residency }));
    return buildState(holders, bases, ms, scenarios);
  });

const same = (x: Record<string, number>, y: Readonly<Record<string, number>>) => LANES.every((l) => x[l] === (y[l] ?? -1));
const weight = (c: Record<string, number> | null) => (c === null ? -1 : LANES.reduce((s, l) => s + c[l]!, 0));

test("property: a cut across lanes is always its base's cut or the cut of a manifest that survives the scenario, never a mix of lane heads", (t) => {
  fc.assert(
    fc.property(stateArb, (state) => {
      for (const sc of state.scenarios) {
        const r = evaluateScenario(state, sc);
        const cut = r.cut;
        if (cut === null) continue;
        const view = applyLosses(state, initialView(state), sc.losses);
        if (r.manifest === null) {
          if (!state.bases.some((b) => b.id === r.base && same(cut, b.cut))) throw new Error(`${sc.name}: cut ${JSON.stringify(cut)} is not its base's`);
        } else {
          const m = state.manifests.find((x) => x.id === r.manifest)!;
          if (!same(cut, m.cut)) throw new Error(`${sc.name}: cut ${JSON.stringify(r.cut)} is not manifest ${m.id}'s`);
          if (!manifestSurvives(state, view, m)) throw new Error(`${sc.name}: manifest ${m.id} did not survive`);
        }
      }
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test("property: a manifest more never lowers a scenario's cut, and one that does not survive never changes it", (t) => {
  fc.assert(
    fc.property(stateArb, manifestArb, (state, extra) => {
      const m: ConsistencyManifest = { id: "extra", cut: extra.cut, holders: [...new Set(extra.holders.map((h) => `h${h % state.holders.length}`))], residency: extra.residency };
      const more = { ...state, manifests: [...state.manifests, m] };
      const before = evaluateState(state).reports;
      const after = evaluateState(more).reports;
      before.forEach((b, i) => {
        const a = after[i]!;
        if (weight(a.cut) < weight(b.cut)) throw new Error(`${b.name}: ${JSON.stringify(b.cut)} -> ${JSON.stringify(a.cut)}`);
        const view = applyLosses(more, initialView(more), state.scenarios[i]!.losses);
        if (!manifestSurvives(more, view, m) && weight(a.cut) !== weight(b.cut)) throw new Error(`${b.name}: a lost manifest changed the cut`);
      });
    }),
    { numRuns: 300 },
  );
  t.pass();
});

/** One holder per lane at its own site, both lanes held through 20, a RAM- or disk-kept manifest at (20, 20). */
function twoHolders(residency: "ram" | "disk" | undefined): EvaluationState {
  const claim = (lane: string) => [{ lane, site: "", ranges: [[1, 20]] as [number, number][], residency: "disk" as Residency }];
  return buildState(
    [
      { site: "r2-a1-h1", claims: claim("a") },
      { site: "r2-a2-h1", claims: claim("b") },
    ],
    [{ holder: 0, cut: { a: 0, b: 0 } }],
    [{ id: "m20", cut: { a: 20, b: 20 }, holders: ["h0", "h1"], residency }],
    [[{ domain: "host:r2-a1-h1", kind: "crash" }], [{ domain: "host:r2-a1-h1", kind: "crash" }, { domain: "host:r2-a2-h1", kind: "crash" }]],
  );
}

test("a manifest kept in RAM lasts while one holder that lists it keeps its process and the range: a crash of both holders leaves the base", (t) => {
  const [one, both] = evaluateState(twoHolders("ram")).reports;
  t.deepEqual([one!.cut, one!.manifest], [{ a: 20, b: 20 }, "m20"], "the lane b holder still keeps it");
  t.deepEqual([both!.cut, both!.manifest], [{ a: 0, b: 0 }, null], "their disks survive, their memory and the manifest do not");
});

test("a manifest on disk (the default) survives its holders' crashes", (t) => {
  for (const residency of ["disk", undefined] as const) {
    const [, both] = evaluateState(twoHolders(residency)).reports;
    t.deepEqual([both!.cut, both!.manifest], [{ a: 20, b: 20 }, "m20"], String(residency));
  }
});
