import test from "ava";
import fc from "fast-check";
import {
  PolicyInputError,
  RouteTable,
  burstThroughput,
  planBytes,
  planProbeRound,
  summarizeRtts,
  withMeasuredEdges,
  withMeasuredLinks,
  type MeasuredEdge,
  type RouteMeasurement,
} from "../../policies/index.ts";

const route = (over: Partial<RouteMeasurement> = {}): RouteMeasurement => ({
  from: "h-a",
  fromSite: "s-a",
  to: "h-b",
  toSite: "s-b",
  rttMs: 100,
  jitterMs: 2,
  throughputBytesPerSec: 500_000,
  loadBytesPerSec: 0,
  measuredAtMs: 10_000,
  ...over,
});

const edge: MeasuredEdge = { from: "s-b", to: "s-a", rttMs: 5, jitterMs: 0, bandwidthBytesPerSec: 125_000_000, charges: [], deps: [] };

test("RTT is the median of the pings and jitter the mean difference of consecutive ones", (t) => {
  t.deepEqual(summarizeRtts([100, 110, 90]), { rttMs: 100, jitterMs: 15 });
  t.deepEqual(summarizeRtts([7]), { rttMs: 7, jitterMs: 0 });
  t.throws(() => summarizeRtts([]), { instanceOf: PolicyInputError });
  t.throws(() => summarizeRtts([1, Number.NaN]), { instanceOf: PolicyInputError });
});

test("a burst's throughput does not count one round trip as transfer time", (t) => {
  t.is(burstThroughput(100_000, 300, 100), 500_000);
  t.is(burstThroughput(1000, 50, 100), 1_000_000, "never divides by less than 1 ms");
});

test("a probe round never sends more than its budget, whatever the peers and sizes", (t) => {
  fc.assert(
    fc.property(
      fc.nat({ max: 10_000_000 }),
      fc.uniqueArray(fc.stringMatching(/^[a-z]{1,6}$/), { maxLength: 12 }),
      fc.record({ pings: fc.nat({ max: 20 }), pingBytes: fc.integer({ min: 1, max: 4096 }), frameBytes: fc.integer({ min: 1, max: 65536 }) }),
      (budget, peers, shape) => {
        const plan = planProbeRound(budget, peers, shape);
        t.true(planBytes(plan, shape) <= budget);
        t.is(plan.length, peers.length);
        for (const p of plan) t.true(p.burstFrames === 0 || p.burstFrames >= 2);
      },
    ),
  );
});

test("a probe budget is split evenly: pings first, the rest of each share as a burst", (t) => {
  const plan = planProbeRound(200_000, ["b", "a"], { pings: 5, pingBytes: 100, frameBytes: 16_384 });
  t.deepEqual(plan, [
    { peer: "a", pings: 5, burstFrames: 6 },
    { peer: "b", pings: 5, burstFrames: 6 },
  ]);
  t.deepEqual(planProbeRound(1000, ["a"], { pings: 5, pingBytes: 100, frameBytes: 16_384 }), [{ peer: "a", pings: 5, burstFrames: 0 }], "no burst when the share cannot pay two frames");
});

test("the route table keeps the newest measurement per peer pair and forgets the stalest pair past its bound", (t) => {
  const table = new RouteTable(2);
  table.add(route({ measuredAtMs: 5 }));
  table.add(route({ measuredAtMs: 3, rttMs: 1 }));
  t.is(table.all().length, 1);
  t.is(table.all()[0]!.measuredAtMs, 5, "an older measurement never replaces a newer one");
  table.add(route({ to: "h-c", toSite: "s-c", measuredAtMs: 9 }));
  table.add(route({ to: "h-d", toSite: "s-d", measuredAtMs: 7 }));
  t.deepEqual(table.all().map((m) => m.to).sort(), ["h-c", "h-d"]);
});

test("a fresh measurement replaces an edge's configured RTT, jitter and bandwidth (either direction) and is shown as measured with its age", (t) => {
  const { edges, sources } = withMeasuredEdges([edge], [route()], 12_000, 60_000);
  t.like(edges[0], { rttMs: 100, jitterMs: 2, bandwidthBytesPerSec: 500_000 });
  t.deepEqual(sources[0], { from: "s-b", to: "s-a", source: "measured", rtt: "measured", bandwidth: "measured", ageMs: 2000 });
});

test("a measurement older than the configured age, or without a burst, leaves the configured values (and says so)", (t) => {
  const stale = withMeasuredEdges([edge], [route()], 80_000, 60_000);
  t.deepEqual(stale.edges[0], edge);
  t.is(stale.sources[0]!.source, "configured");
  const noBurst = withMeasuredEdges([edge], [route({ throughputBytesPerSec: null })], 12_000, 60_000);
  t.is(noBurst.edges[0]!.bandwidthBytesPerSec, edge.bandwidthBytesPerSec);
  t.like(noBurst.sources[0], { rtt: "measured", bandwidth: "configured" });
});

test("evaluation links take a fresh measured bandwidth and the steady load each surviving sender measured", (t) => {
  const link = { id: "a-b", from: "s-a", to: "s-b", bandwidthBytesPerSec: 125_000_000, deps: [] };
  const { links, loads } = withMeasuredLinks([link], [route({ loadBytesPerSec: 40_000 }), route({ from: "h-b", fromSite: "s-b", to: "h-a", toSite: "s-a", throughputBytesPerSec: null, loadBytesPerSec: 1000 })], 11_000, 60_000);
  t.like(links[0], { bandwidthBytesPerSec: 500_000, measuredAgeMs: 1000 });
  t.deepEqual(loads, [
    { link: "a-b", fromSite: "s-a", bytesPerSec: 40_000 },
    { link: "a-b", fromSite: "s-b", bytesPerSec: 1000 },
  ]);
  t.deepEqual(withMeasuredLinks([link], [route()], 200_000, 60_000).links[0], link, "stale: configured");
});
