import test from "ava";
import fc from "fast-check";
import { RangeSet } from "../../lanes/range-set.ts";
import {
  authorizeReleases,
  evaluateState,
  requiredReports,
  keepsCut,
  withReleases,
  type EvaluationState,
  type Holder,
  type LossKind,
  type Residency,
} from "../../policies/index.ts";

// Random single-lane states over a small fixed topology: 2 regions × 2 AZs × 2 hosts, one lane of 40 sequences.
const SITES = ["r1-a1-h1", "r1-a1-h2", "r1-a2-h1", "r2-a1-h1", "r2-a2-h1", "r2-a2-h2"].map((id) => {
  const [r, a, h] = id.split("-");
  return { id, region: r!, az: `${r}-${a}`, host: id, deps: [`power:${r}-${a}`] };
});
const ACKED = 40;
const residencyArb = fc.constantFrom<Residency>("ram", "disk", "protected_ram");
const rangesArb = fc.array(fc.tuple(fc.integer({ min: 0, max: ACKED }), fc.integer({ min: 0, max: 12 })), { minLength: 1, maxLength: 3 }).map((rs) => rs.map(([a, n]) => [a, Math.min(ACKED, a + n)] as [number, number]));
const claimArb = fc.record({ ranges: rangesArb, residency: residencyArb, valid: fc.boolean() });
const holderArb = fc.record({ site: fc.constantFrom(...SITES.map((s) => s.id)), claims: fc.array(claimArb, { minLength: 1, maxLength: 2 }) });
const lossArb = fc.record({
  domain: fc.constantFrom("region:r1", "region:r2", "az:r1-a1", "az:r2-a2", "host:r1-a1-h1", "power:r2-a1", "site:r2-a2-h2"),
  kind: fc.constantFrom<LossKind>("crash", "power_loss", "site_destruction", "partition"),
});
const scenarioArb = fc.record({ losses: fc.array(lossArb, { minLength: 1, maxLength: 3 }), required: fc.boolean() });

function buildHolder(h: { site: string; claims: { ranges: [number, number][]; residency: Residency; valid: boolean }[] }, i: number): Holder {
  return {
    id: `h${i}`,
    site: h.site,
    claims: h.claims.map((c) => ({ lane: "l0", ranges: RangeSet.from(c.ranges), residency: c.residency, protectedRamValid: c.valid, evidence: { kind: "observed" as const, atMs: 1000 } })),
  };
}

const stateArb = fc
  .record({
    holders: fc.array(holderArb, { minLength: 1, maxLength: 6 }),
    baseHolders: fc.array(fc.record({ holder: fc.nat(5), cut: fc.integer({ min: 0, max: 20 }) }), { minLength: 1, maxLength: 2 }),
    scenarios: fc.array(scenarioArb, { minLength: 1, maxLength: 4 }),
  })
  .map(({ holders, baseHolders, scenarios }): EvaluationState => {
    const hs = holders.map(buildHolder);
    return {
      volume: "v",
      asOfMs: 2000,
      staleAfterMs: 10_000,
      source: { site: "r1-a1-h1", lanes: { l0: ACKED } },
      commits: [{ lane: "l0", first: 0, last: ACKED, committedAtMs: 500, bytesPerSeq: 100 }],
      sites: SITES,
      holders: hs,
      bases: baseHolders.map((b, i) => ({ id: `b${i}`, holder: hs[b.holder % hs.length]!.id, cut: { l0: b.cut }, bytes: 1000 })),
      manifests: [],
      keyAuthorities: [{ id: "k1", site: "r1-a2-h1" }, { id: "k2", site: "r2-a1-h1" }],
      links: SITES.slice(1).map((s, i) => ({ id: `l${i}`, from: SITES[0]!.id, to: s.id, bandwidthBytesPerSec: 1e6, deps: [] })),
      recovery: { destination: "r2-a1-h1", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
      forwards: [],
      pins: [],
      recoveries: [],
      scenarios: scenarios.map((s, i) => ({ name: `s${i}`, losses: s.losses, deadlineSec: 100, required: s.required })),
      timelines: [],
    };
  });

const cutOf = (c: Record<string, number> | null) => (c === null ? -1 : c.l0!);

test("property: adding a copy never shrinks any scenario's surviving cut", (t) => {
  fc.assert(
    fc.property(stateArb, holderArb, (state, extra) => {
      const before = evaluateState(state).reports;
      const more = { ...state, holders: [...state.holders, buildHolder(extra, state.holders.length)] };
      const after = evaluateState(more).reports;
      before.forEach((b, i) => {
        if (cutOf(after[i]!.cut) < cutOf(b.cut)) throw new Error(`${b.name}: ${cutOf(b.cut)} -> ${cutOf(after[i]!.cut)}`);
      });
    }),
    { numRuns: 150 },
  );
  t.pass();
});

test("property: authorizing releases never leaves a required scenario below its cut", (t) => {
  const reqArb = fc.array(fc.record({ holder: fc.nat(5), first: fc.integer({ min: 0, max: ACKED }), len: fc.integer({ min: 0, max: 15 }) }), { minLength: 1, maxLength: 5 });
  let granted = 0;
  fc.assert(
    fc.property(stateArb, reqArb, (state, reqs) => {
      const requests = reqs.map((r) => ({ holder: state.holders[r.holder % state.holders.length]!.id, lane: "l0", ranges: RangeSet.of(r.first, Math.min(ACKED, r.first + r.len)) }));
      const decisions = authorizeReleases(state, requests);
      const allowed = decisions.filter((d) => d.allowed).map((d) => d.request);
      granted += allowed.length;
      const before = requiredReports(state);
      const after = requiredReports(withReleases(state, allowed));
      before.forEach((b, i) => {
        if (!keepsCut(b, after[i]!)) throw new Error(`${b.name} fell below its cut`);
      });
    }),
    { numRuns: 150 },
  );
  t.true(granted > 0, "the generator must exercise granted releases too");
});

test("property: evaluation is deterministic (same input, same report)", (t) => {
  fc.assert(
    fc.property(stateArb, (state) => {
      const a = JSON.stringify(evaluateState(state));
      // Same input again, and the same input with its lists copied: identical reports.
      const b = JSON.stringify(evaluateState(state));
      const c = JSON.stringify(evaluateState({ ...state, holders: [...state.holders], scenarios: [...state.scenarios] }));
      return a === b && a === c;
    }),
    { numRuns: 100 },
  );
  t.pass();
});
