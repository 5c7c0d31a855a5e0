import test from "ava";
import { buildEvaluationState } from "../../actors/controller/evaluation-input.ts";
import { manifestId, receiptedManifests, splitConsistencyCuts } from "../../actors/controller/receipted-manifests.ts";
import { statusDocument } from "../../actors/controller/status-document.ts";
import type { VolumeTopology } from "../../actors/controller/controller-config.ts";
import type { ConsistencyCut } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { evaluateState } from "../../policies/evaluate.ts";
import { site } from "../e2e/e2e-fixture.ts";

const cut = (lane: string, throughSeq: number, volume = "v"): ConsistencyCut => ({ volume, lane, throughSeq });

test("a receipt's consistency cuts split into manifests at every member that does not sort after its predecessor", (t) => {
  t.deepEqual(splitConsistencyCuts([cut("a", 9), cut("b", 7), cut("a", 5), cut("b", 4), cut("c", 1), cut("b", 2)]), [[cut("a", 9), cut("b", 7)], [cut("a", 5), cut("b", 4), cut("c", 1)], [cut("b", 2)]]);
  t.deepEqual(splitConsistencyCuts([]), []);
  t.deepEqual(splitConsistencyCuts([cut("b", 1, "v1"), cut("a", 1, "v2")]), [[cut("b", 1, "v1"), cut("a", 1, "v2")]], "volume first, then lane");
});

const SITES = { "s-w": site("s-w", "r1", "az1"), "s-a": site("s-a", "r1", "az2"), "s-b": site("s-b", "r2", "az3") };
const topo: VolumeTopology = {
  volume: "v",
  lanes: ["a", "b"],
  writerSite: "s-w",
  sites: Object.values(SITES),
  holderSites: { "h-a": "s-a", "h-b": "s-b" },
  bases: [{ id: "genesis", holder: "h-b", cut: { a: 0, b: 0 }, bytes: 0 }],
  keyAuthorities: [{ id: "ka", site: "s-b" }],
  links: [],
  recovery: { destination: "s-b", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
  scenarios: [{ name: "writer lost", losses: [{ domain: "az:az1", kind: "site_destruction" }], deadlineSec: 3600, required: true }],
  timelines: [],
  staleAfterMs: 1000,
  releasable: [],
};

function holding(holderId: string, lane: string, through: number, cuts: ConsistencyCut[], issuedAt = 100): never {
  return {
    holderId,
    incarnation: 1,
    volume: "v",
    lane,
    obligationId: `v-${lane}`,
    representation: "raw",
    residency: "ram",
    evidence: { kind: "ram", capabilityGeneration: 0, observedAt: issuedAt },
    retained: RangeSet.of(1, through),
    prefix: { base: 0, through },
    receiptSeq: 1,
    issuedAt,
    evidenceAt: issuedAt,
    stale: false,
    survivesPowerLoss: false,
    receipt: { payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: cuts } } },
  } as never;
}

test("the controller's evaluation input carries the manifests fresh receipts list, with every holder listing each, kept in RAM", (t) => {
  const both = [cut("a", 10), cut("b", 8), cut("a", 6), cut("b", 5)];
  const hs = [holding("h-a", "a", 10, both), holding("h-b", "b", 8, [cut("a", 10), cut("b", 8)])];
  const state = buildEvaluationState(topo, hs, { heads: { a: 10, b: 8 }, commits: [] }, 200, new Set());
  t.deepEqual(state.manifests, [
    { id: manifestId({ a: 10, b: 8 }), cut: { a: 10, b: 8 }, holders: ["h-a", "h-b"], residency: "ram" },
    { id: manifestId({ a: 6, b: 5 }), cut: { a: 6, b: 5 }, holders: ["h-a"], residency: "ram" },
  ]);
  const doc = statusDocument("ctl", 1, state, evaluateState(state), 0);
  t.like(doc.scenarios[0], { cut: [["a", 10], ["b", 8]], manifest: "m:a:10:b:8", base: "genesis" });
});

test("manifests of failed or stale holders, of another volume, naming an unknown lane or a single lane are not evidence", (t) => {
  const lanes = ["a", "b"];
  const fresh = () => true;
  t.deepEqual(receiptedManifests("v", lanes, [holding("h-a", "a", 10, [cut("a", 10), cut("x", 8)])], fresh), [], "unknown lane");
  t.deepEqual(receiptedManifests("v", lanes, [holding("h-a", "a", 10, [cut("a", 10)])], fresh), [], "one lane is no cut across lanes");
  t.deepEqual(receiptedManifests("v", lanes, [holding("h-a", "a", 10, [cut("a", 10, "w"), cut("b", 8, "w")])], fresh), [], "another volume");
  const hs = [holding("h-a", "a", 10, [cut("a", 10), cut("b", 8)], 100), holding("h-b", "b", 8, [cut("a", 10), cut("b", 8)], 100)];
  t.deepEqual(buildEvaluationState(topo, hs, { heads: { a: 10, b: 8 }, commits: [] }, 200, new Set(["h-a", "h-b"])).manifests, [], "failed holders");
  t.deepEqual(buildEvaluationState(topo, hs, { heads: { a: 10, b: 8 }, commits: [] }, 100 + topo.staleAfterMs + 1, new Set()).manifests, [], "stale receipts");
  // Without a manifest the cut across lanes is the base's, however far each lane reaches.
  const state = buildEvaluationState(topo, [holding("h-a", "a", 10, []), holding("h-b", "b", 8, [])], { heads: { a: 10, b: 8 }, commits: [] }, 200, new Set());
  t.deepEqual(evaluateState(state).reports[0]!.cut, { a: 0, b: 0 });
});
