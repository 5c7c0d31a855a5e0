/**
 * The controller's release decision (actors/controller/release-plan.ts) is a pure function of the
 * plain memory the machine keeps, the folded log and the evaluation state: no NATS, no clock.
 */
import test from "ava";
import { planReleases, initialReleaseMemory, type ReleaseMemory } from "../../actors/controller/release-plan.ts";
import { buildEvaluationState } from "../../actors/controller/evaluation-input.ts";
import type { ControllerConfig, VolumeTopology } from "../../actors/controller/controller-config.ts";
import { INITIAL_CONTROL_STATE, type ControlState } from "../../custody/control-records.ts";
import type { Holding } from "../../custody/receipt-ledger.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { authorizeReleases, ReleaseRequest } from "../../policies/index.ts";

const topo: VolumeTopology = {
  volume: "v",
  lanes: ["l0"],
  writerSite: "src",
  sites: [
    { id: "src", region: "r1", az: "a1", host: "hs", deps: [] },
    { id: "s1", region: "r1", az: "a2", host: "h1", deps: [] },
    { id: "s2", region: "r2", az: "b1", host: "h2", deps: [] },
  ],
  holderSites: { h1: "s1", h2: "s2" },
  bases: [{ id: "genesis", holder: "h2", cut: { l0: 0 }, bytes: 0 }],
  keyAuthorities: [{ id: "ka", site: "s2" }],
  links: [],
  recovery: { destination: "s2", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
  scenarios: [],
  timelines: [],
  staleAfterMs: 60_000,
  releasable: ["h1", "h2"],
};
const config = { topology: topo, releaseEveryMs: 1_000 } as unknown as ControllerConfig;
const NOW = 50_000;

const holding = (holderId: string, residency: "ram" | "disk"): Holding =>
  ({ holderId, incarnation: 1, volume: "v", lane: "l0", obligationId: "v-l0", residency, retained: RangeSet.of(1, 60), issuedAt: NOW, evidenceAt: NOW, stale: false, receipt: { payload: { manifest: { baseSnapshots: [] } } } }) as unknown as Holding;

const active = (id: string) => ({ holderId: id, incarnation: 1, publicKey: new Uint8Array(32), failureDomain: id, status: "active" as const });
const log: ControlState = { ...INITIAL_CONTROL_STATE, holders: { h1: active("h1"), h2: active("h2") } };
const state = buildEvaluationState(topo, [holding("h1", "ram"), holding("h2", "disk")], { heads: { l0: 60 }, commits: [{ lane: "l0", first: 1, last: 60, committedAtMs: 1_000, bytesPerSeq: 4096 }] }, NOW, new Set());
const held = { pins: [], recoveries: [] };

/** Grants every request of `allow`, denies the others for "unsafe" twice (counted once). */
const authorize = (allow: string[]): typeof authorizeReleases => (_s, requests) =>
  requests.map((request: ReleaseRequest) => ({ request, allowed: allow.includes(request.holder), reasons: allow.includes(request.holder) ? [] : (["unsafe", "unsafe"] as never), scenarios: [] }));

test("the holders due are asked, granted ones come back in order, denials are counted by reason, and a disk holder becomes durable", (t) => {
  const memory = Object.freeze(initialReleaseMemory(config));
  const plan = planReleases(memory, config, log, state, held, NOW, authorize(["h1"]));
  t.deepEqual(plan.granted.map((r) => [r.holder, r.lane]), [["h1", "l0"]]);
  t.deepEqual(plan.durable, ["h2"], "h2 claims disk: it is released only onto disk or a base from now on");
  t.deepEqual(memory.durable, [], "the memory given is not changed");
  t.deepEqual(plan.effects, []);
  const none = planReleases(memory, config, log, state, held, NOW, authorize([]));
  t.deepEqual(none.granted, []);
  t.deepEqual(none.effects, [
    { type: "count", name: "release_denied" },
    { type: "count", name: "release_denied.unsafe" },
  ], "one denial, each distinct reason once");
});

test("a holder released less than releaseEveryMs ago, or not active in the log, is not asked", (t) => {
  const recent: ReleaseMemory = { lastReleaseAt: { h1: NOW - 999 }, durable: [] };
  let asked: string[] = [];
  const spy: typeof authorizeReleases = (s, requests) => {
    asked = requests.map((r) => r.holder);
    return authorize(["h1", "h2"])(s, requests);
  };
  planReleases(recent, config, log, state, held, NOW, spy);
  t.false(asked.includes("h1"));
  asked = [];
  planReleases({ ...recent, lastReleaseAt: { h1: NOW - 1_000 } }, config, log, state, held, NOW, spy);
  t.true(asked.includes("h1"));
  asked = [];
  const retired: ControlState = { ...log, holders: { ...log.holders, h1: { ...active("h1"), status: "retired" } } };
  planReleases(initialReleaseMemory(config), config, retired, state, held, NOW, spy);
  t.false(asked.includes("h1"));
});

test("nothing to ask: authorize is not called and nothing is granted", (t) => {
  const none: typeof authorizeReleases = () => t.fail("not called") as never;
  const cfg = { ...config, topology: { ...topo, releasable: [] } } as unknown as ControllerConfig;
  const plan = planReleases(initialReleaseMemory(cfg), cfg, log, state, held, NOW, none);
  t.deepEqual(plan.granted, []);
  t.deepEqual(plan.effects, []);
});
