import test from "ava";
import { ControllerRoutes } from "../../actors/controller/controller-routes.ts";
import { parseEvaluationState, type EvaluationState, type RouteMeasurement } from "../../policies/index.ts";

const site = (id: string) => ({ id, region: id, az: `${id}-a`, host: `host-${id}`, deps: [] });

function state(asOfMs: number): EvaluationState {
  return parseEvaluationState({
    volume: "v1",
    asOfMs,
    staleAfterMs: 10_000,
    source: { site: "s-w", lanes: { l0: 0 } },
    sites: [site("s-w"), site("s-eu"), site("s-r")],
    holders: [],
    links: [
      { id: "w-eu", from: "s-w", to: "s-eu", bandwidthBytesPerSec: 125_000_000 },
      { id: "eu-r", from: "s-eu", to: "s-r", bandwidthBytesPerSec: 125_000_000 },
    ],
    recovery: { destination: "s-eu", detectSec: 1, authorizeSec: 0, acquireCapacitySec: 0, persistSec: 0, validateSec: 0 },
  });
}

const measured = (over: Partial<RouteMeasurement>): RouteMeasurement => ({
  from: "h-eu",
  fromSite: "s-eu",
  to: "h-r",
  toSite: "s-r",
  rttMs: 20,
  jitterMs: 1,
  throughputBytesPerSec: 50_000,
  loadBytesPerSec: 10_000,
  measuredAtMs: 100_000,
  ...over,
});

test("without a routes setting the evaluation and the repair estimate stay as configured", (t) => {
  const r = new ControllerRoutes(undefined);
  r.table.add(measured({}));
  const s = state(101_000);
  t.is(r.apply(s), s);
  t.deepEqual(r.repairBandwidth(r.apply(s), "s-r", 1e6), { bytesPerSec: 1e6, source: "configured" });
});

test("a fresh measurement replaces the link's configured bandwidth, its load is shared, and the repair estimate says measured", (t) => {
  const r = new ControllerRoutes({ maxAgeMs: 30_000 });
  r.table.add(measured({}));
  const s = r.apply(state(101_000));
  t.like(s.links.find((l) => l.id === "eu-r"), { bandwidthBytesPerSec: 50_000, measuredAgeMs: 1000 });
  t.deepEqual(s.links.find((l) => l.id === "w-eu")!.measuredAgeMs, undefined);
  t.deepEqual(s.linkLoads, [{ link: "eu-r", fromSite: "s-eu", bytesPerSec: 10_000 }]);
  t.deepEqual(r.repairBandwidth(s, "s-r", 1e6), { bytesPerSec: 40_000, source: "measured" });
});

test("a measurement older than maxAgeMs no longer counts", (t) => {
  const r = new ControllerRoutes({ maxAgeMs: 30_000 });
  r.table.add(measured({}));
  const s = r.apply(state(200_000));
  t.is(s.links.find((l) => l.id === "eu-r")!.bandwidthBytesPerSec, 125_000_000);
  t.deepEqual(r.repairBandwidth(s, "s-r", 1e6), { bytesPerSec: 1e6, source: "configured" });
});
