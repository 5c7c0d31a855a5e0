import test from "ava";
import { applySpendCeiling, Bytes, legMonthlyCost, memoryNeeded, planBudgets, PolicyInputError, streamCost } from "../../policies/index.ts";

test("memo arithmetic: 1 GiB/s retained for 5 s needs about 5 GiB", (t) => {
  const m = memoryNeeded({ retainedBytesPerSec: Bytes.GiB, retentionSec: 5 });
  t.is(m.totalBytes, 5 * Bytes.GiB);
});

test("memo arithmetic: 1 GiB/s retained for one hour needs about 3.52 TiB", (t) => {
  const m = memoryNeeded({ retainedBytesPerSec: Bytes.GiB, retentionSec: 3600 });
  t.is(m.totalBytes, 3600 * Bytes.GiB);
  t.is((m.totalBytes / Bytes.TiB).toFixed(2), "3.52");
});

test("memory adds bursts, pins, credits and the backlog of a forwarding outage", (t) => {
  const m = memoryNeeded({ retainedBytesPerSec: 100, retentionSec: 5, burstBytes: 7, pinnedBytes: 11, creditBytes: 13, forwardingOutageSec: 60 });
  t.deepEqual(m, { steadyBytes: 500, outageBacklogBytes: 6000, burstBytes: 7, pinnedBytes: 11, creditBytes: 13, totalBytes: 6531 });
});

test("negative sizing input is a typed error naming the field", (t) => {
  const err = t.throws(() => memoryNeeded({ retainedBytesPerSec: -1, retentionSec: 5 }), { instanceOf: PolicyInputError });
  t.is(err!.detail.field, "retainedBytesPerSec");
});

test("memo arithmetic: 1 GB/s at $0.02/GB for 30 days is $51,840 per leg, ten legs $518,400", (t) => {
  t.is(Math.round(legMonthlyCost(Bytes.GB, 0.02) * 100) / 100, 51_840);
  const edges = Array.from({ length: 10 }, (_, i) => ({ from: `h${i}`, to: `h${i + 1}`, charges: [{ name: "transfer", usdPerGB: 0.02 }] }));
  const c = streamCost(edges, Bytes.GB);
  t.is(c.legs.length, 10);
  t.is(Math.round(c.totalUsd * 100) / 100, 518_400);
});

test("each charge on an edge is its own leg (inter-region transfer plus transit-gateway processing)", (t) => {
  const c = streamCost([{ from: "use1", to: "usw2", charges: [{ name: "inter_region", usdPerGB: 0.02 }, { name: "tgw_processing", usdPerGB: 0.02 }] }], Bytes.GB);
  t.deepEqual(c.legs.map((l) => l.charge), ["inter_region", "tgw_processing"]);
  t.is(Math.round(c.totalUsd), 2 * 51_840);
});

test("steady, catch-up, repair and long-outage budgets are kept separate", (t) => {
  const p = planBudgets({
    bytesPerSec: Bytes.GB,
    usdPerGBPath: 0.02,
    catchUpBytes: 100 * Bytes.GB,
    repairBytesPerFailure: 500 * Bytes.GB,
    declaredFailuresPerPeriod: 2,
    longOutageSec: 3600,
  });
  t.is(Math.round(p.budgets.steady.usd), 51_840);
  t.is(p.budgets.catch_up.usd, 2);
  t.is(p.budgets.repair.usd, 20);
  t.is(p.budgets.long_outage.bytes, 3600 * Bytes.GB);
  t.is(p.longOutageBacklogBytes, 3600 * Bytes.GB);
  t.is(Math.round(p.totalUsd), 51_840 + 2 + 20 + 72);
});

test("a spend ceiling stops only optional copies and reports their growing lag", (t) => {
  const r = applySpendCeiling(
    [
      { id: "geo-required", required: true, monthlyUsd: 5000, bytesPerSec: 1e8 },
      { id: "buddy-optional", required: false, monthlyUsd: 3000, bytesPerSec: 1e8 },
      { id: "cheap-optional", required: false, monthlyUsd: 500, bytesPerSec: 1e7 },
    ],
    6000,
  );
  t.deepEqual(r.outcomes.map((o) => [o.id, o.action, o.lagGrowthBytesPerSec]), [
    ["geo-required", "keep", 0],
    ["buddy-optional", "stop", 1e8],
    ["cheap-optional", "keep", 0],
  ]);
  t.is(r.totalUsd, 5500);
  t.false(r.overCeiling);
});

test("a required path over the ceiling takes another qualified path, else backpressure; it is never stopped", (t) => {
  const alt = applySpendCeiling(
    [{ id: "req", required: true, monthlyUsd: 8000, bytesPerSec: 1e8, alternatives: [{ id: "unqualified", monthlyUsd: 100, qualified: false }, { id: "via-colo", monthlyUsd: 4000, qualified: true }] }],
    5000,
  );
  t.deepEqual(alt.outcomes.map((o) => [o.action, o.via]), [["alternate_path", "via-colo"]]);
  const bp = applySpendCeiling([{ id: "req", required: true, monthlyUsd: 8000, bytesPerSec: 1e8 }], 5000);
  t.is(bp.outcomes[0]!.action, "backpressure");
  t.true(bp.overCeiling);
  t.false(bp.outcomes.some((o) => o.action === "stop"));
});
