import test from "ava";
import type { VolumeTopology } from "../../actors/controller/controller-config.ts";
import { buildEvaluationState } from "../../actors/controller/evaluation-input.ts";
import { protectedRamOverBound, type ProtectedRamLayout } from "../../actors/controller/protected-ram-check.ts";
import type { Holding } from "../../custody/receipt-ledger.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { evaluateScenario, PolicyInputError } from "../../policies/index.ts";

const NOW = 1_800_000_000_000;
/** A verified protected-RAM holding (only the fields the controller's state builder reads). */
const holding = (holderId: string, ranges: RangeSet): Holding =>
  ({
    holderId,
    incarnation: 1,
    volume: "v",
    lane: "l0",
    obligationId: "v-l0",
    residency: "protected_ram",
    retained: ranges,
    issuedAt: NOW - 10,
    evidenceAt: NOW - 10,
    stale: false,
    receipt: { payload: { manifest: { baseSnapshots: [] } } },
  }) as unknown as Holding;

/** 1 MB per sequence; 0.5 s of detection, persistence and margin against 2 s of hold-up. */
const commits = [{ lane: "l0", first: 1, last: 100, committedAtMs: NOW - 1000, bytesPerSeq: 1_000_000 }];
const node = (psu: string) => ({ reservedDrainBytesPerSec: 100e6, detectionSec: 0.2, persistenceCompletionSec: 0.2, marginSec: 0.1, usableHoldUpSec: 2, drainTarget: "nvme-shared", controller: `ctl-${psu}`, link: `link-${psu}`, powerSupply: psu });
const layout = (targetBytesPerSec: number): ProtectedRamLayout => ({ nodes: { h1: node("p1"), h2: node("p2") }, capacities: { targets: { "nvme-shared": targetBytesPerSec } } });
// Each holder queues 60 MB: alone it drains in 0.6 s (fits 1.5 s of slack); two at once into
// a 60 MB/s target take 2 s (they do not).
const holdings = [holding("h1", RangeSet.of(1, 60)), holding("h2", RangeSet.of(41, 100))];

test("the controller judges protected-RAM holders together: two that each fit alone but share a drain target too small for both are over the bound", (t) => {
  t.deepEqual([...protectedRamOverBound(layout(60e6), holdings, commits)].sort(), ["h1", "h2"]);
  t.deepEqual([...protectedRamOverBound(layout(200e6), holdings, commits)], []);
  t.deepEqual([...protectedRamOverBound(layout(60e6), [holdings[0]!], commits)], [], "one holder alone fits the shared target");
});

test("a drain layout whose shared target has no capacity is refused with the path named", (t) => {
  const e = t.throws(() => protectedRamOverBound({ nodes: { h1: node("p1"), h2: node("p2") } }, holdings, commits), { instanceOf: PolicyInputError });
  t.regex(e!.message, /capacities\.targets\.nvme-shared/);
});

test("protected-RAM claims over the shared-drain bound do not survive a power loss in the controller's evaluation", (t) => {
  const topo: VolumeTopology = {
    volume: "v",
    lanes: ["l0"],
    writerSite: "src",
    sites: [
      { id: "src", region: "r1", az: "a1", host: "hs", deps: [] },
      { id: "s1", region: "r1", az: "a2", host: "hh", deps: ["power:feed-b"] },
    ],
    holderSites: { h1: "s1", h2: "s1" },
    bases: [{ id: "genesis", holder: "h1", cut: { l0: 0 }, bytes: 0 }],
    keyAuthorities: [{ id: "ka", site: "s1" }],
    links: [],
    recovery: { destination: "s1", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
    scenarios: [{ name: "feed B power lost", losses: [{ domain: "power:feed-b", kind: "power_loss" }], deadlineSec: 600, required: true, destination: "s1" }],
    timelines: [],
    staleAfterMs: 60_000,
    releasable: [],
  };
  const cutWith = (over: ReadonlySet<string>) => {
    const state = buildEvaluationState(topo, holdings, { heads: { l0: 100 }, commits }, NOW, new Set(), { protectedOverBound: over });
    return evaluateScenario(state, state.scenarios[0]!).cut;
  };
  t.deepEqual(cutWith(protectedRamOverBound(layout(200e6), holdings, commits)), { l0: 100 }, "within the bound protected RAM rides through the power loss");
  t.deepEqual(cutWith(protectedRamOverBound(layout(60e6), holdings, commits)), { l0: 0 }, "over it, the claims count as plain RAM");
});
