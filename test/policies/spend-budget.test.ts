import test from "ava";
import { PolicyInputError } from "../../policies/index.ts";
import { parseSpendConfig, PERIOD_MS, SpendGuard, SpendRefusal, type WorkRequest } from "../../policies/spend-budget.ts";

const GB = 1e9;
const config = (over: Record<string, unknown> = {}) =>
  parseSpendConfig({
    monthlyCeilingUsd: 100,
    edges: [{ from: "use1", to: "euw1", charges: [{ name: "inter_region", usdPerGB: 0.02 }, { name: "tgw", usdPerGB: 0.02 }] }],
    steadyPath: [0],
    plan: { bytesPerSec: 0, catchUpBytes: 0, repairBytesPerFailure: 100 * GB, declaredFailuresPerPeriod: 2, longOutageSec: 0 },
    ...over,
  });
const copy = (bytes: number, over: Partial<WorkRequest> = {}): WorkRequest => ({ id: "c", kind: "repair", required: false, bytes, fromRegions: ["use1"], toRegion: "euw1", ...over });

test("an optional copy is priced per GB on its region edge and charged to its budget", (t) => {
  const g = new SpendGuard(config(), 0);
  t.deepEqual(g.decide(copy(10 * GB), 1), { allowed: true, usd: 0.4 });
  const repair = g.report(1).budgets.find((b) => b.kind === "repair")!;
  t.like(repair, { budgetBytes: 200 * GB, spentBytes: 10 * GB, spentUsd: 0.4 });
});

test("optional work past its budget's bytes is refused as budget_exhausted; required work past it still runs", (t) => {
  const g = new SpendGuard(config(), 0);
  t.true(g.decide(copy(150 * GB), 1).allowed);
  t.like(g.decide(copy(60 * GB), 2), { allowed: false, reason: SpendRefusal.budget });
  t.true(g.decide(copy(60 * GB, { required: true }), 3).allowed);
  t.is(g.report(3).refusedOptional, 1);
});

test("optional work that would take the period over the ceiling is refused; the plan alone over the ceiling refuses all of it, never required work", (t) => {
  const tight = new SpendGuard(config({ monthlyCeilingUsd: 1 }), 0);
  t.like(tight.decide(copy(1), 1), { allowed: false, reason: SpendRefusal.ceiling });
  t.true(tight.decide(copy(GB, { required: true }), 1).allowed);
  t.true(tight.report(1).overCeiling, "a $8 repair plan is over a $1 ceiling");
});

test("a copy between regions no edge prices is refused as unpriced when optional", (t) => {
  const g = new SpendGuard(config(), 0);
  t.like(g.decide(copy(1, { fromRegions: ["usw2"] }), 1), { allowed: false, usd: null, reason: SpendRefusal.unpriced });
  t.deepEqual(g.decide(copy(5, { fromRegions: ["euw1"] }), 1), { allowed: true, usd: 0 }, "inside one region it is free");
});

test("spend starts again with each 30-day period", (t) => {
  const g = new SpendGuard(config(), 0);
  t.true(g.decide(copy(200 * GB), 1).allowed);
  t.false(g.decide(copy(GB), 2).allowed);
  t.true(g.decide(copy(GB), PERIOD_MS + 5).allowed);
  t.is(g.report(PERIOD_MS + 5).periodStartMs, PERIOD_MS);
});

test("a spend section with an unknown key or a steady path naming no edge is refused naming the path", (t) => {
  t.throws(() => config({ ceilingUsd: 3 }), { instanceOf: PolicyInputError });
  const e = t.throws(() => config({ steadyPath: [4] }), { instanceOf: PolicyInputError });
  t.regex(e!.message, /steadyPath\[0\]/);
});
