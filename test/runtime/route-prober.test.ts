/**
 * Measured routes over a real nats-server: a writer-side prober whose probes go through the
 * `links` shaper (100 ms, 0.5 MB/s to the holder's site) and a holder-side endpoint that answers.
 */
import anyTest, { type TestFn } from "ava";
import { Counters, systemClock } from "../../core/index.ts";
import { decodeRouteMeasurements, probeSubject, routeSubject, unitSubject, type RouteMeasurements } from "../../transport/protocol/index.ts";
import { shapedByLinks } from "../../actors/runtime/role-links.ts";
import { RouteProber } from "../../actors/runtime/route-prober.ts";
import { UnitTrafficMeter } from "../../actors/runtime/unit-traffic-meter.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext & { connect(name: string): Promise<NatsTransport> }>;
withNatsServer(test);
test.before((t) => {
  t.context.connect = async (name) => {
    const tr = await NatsTransport.connect({ servers: t.context.nats.url, name, maxReconnectAttempts: 0 });
    t.context.defer(() => tr.close());
    return tr;
  };
});

const LATENCY_MS = 100;
const MBPS = 0.5;
const BUDGET = 200_000;

/** The `n`th next measurement `from` publishes, as an observer on the bus receives it. */
function nextMeasurement(observer: NatsTransport, from: string, n = 1): Promise<RouteMeasurements> {
  let seen = 0;
  return new Promise((resolve) => {
    const sub = observer.subscribe(routeSubject(from), (m) => {
      if (++seen < n) return;
      sub.unsubscribe();
      resolve(decodeRouteMeasurements(m.data, from));
    });
  });
}

/** A holder that answers probes (it probes nobody itself). */
async function answeringHolder(t: { context: { connect(name: string): Promise<NatsTransport> } }, id: string): Promise<RouteProber> {
  const tr = await t.context.connect(id);
  const h = new RouteProber({ self: id, site: `s-${id}`, peers: {}, intervalMs: 3_600_000, budgetBytesPerInterval: 0 }, { transport: tr, clock: systemClock });
  h.endpoint.start();
  await tr.flush();
  return h;
}

// Four rounds: the rate is the median of the recent bursts, each less the quietest recent ping.
test("a route shaped to 100 ms and 0.5 MB/s is measured over four rounds at no less than 90 ms RTT and no more than the shaped rate, within the probe budget", async (t) => {
  await answeringHolder(t, "h-b");
  const observer = await t.context.connect("observer");
  const bus = await t.context.connect("w1");
  const sending = shapedByLinks(bus, { site: "s-a", peers: { "h-b": { site: "s-b", latencyMs: LATENCY_MS, bandwidthMBps: MBPS } } });
  const prober = new RouteProber({ self: "w1", site: "s-a", peers: { "h-b": { site: "s-b" } }, intervalMs: 200, budgetBytesPerInterval: BUDGET, pings: 3, frameBytes: 8192, timeoutMs: 10_000 }, { transport: sending, clock: systemClock });
  const published = nextMeasurement(observer, "w1", 4);
  await observer.flush();
  prober.start();
  t.teardown(() => prober.stop());
  const m = await published;
  t.log(`measured rtt ${m.routes[0]?.rttMs.toFixed(1)} ms, jitter ${m.routes[0]?.jitterMs.toFixed(1)} ms, throughput ${m.routes[0]?.throughputBytesPerSec?.toFixed(0)} B/s, probe bytes ${m.probeBytes}`);
  t.is(m.fromSite, "s-a");
  t.is(m.routes.length, 1);
  const r = m.routes[0]!;
  t.like(r, { to: "h-b", toSite: "s-b", samples: 3 });
  t.true(r.rttMs >= LATENCY_MS * 0.9, `rtt ${r.rttMs} ms`);
  t.not(r.throughputBytesPerSec, null);
  t.true(r.throughputBytesPerSec! <= MBPS * 1e6 * 1.25, `throughput ${r.throughputBytesPerSec} B/s`);
  t.true(m.probeBytes > 0 && m.probeBytes <= BUDGET, `probe bytes ${m.probeBytes}`);
});

test("the steady load a prober publishes is the unit bytes it sent to that peer", async (t) => {
  await answeringHolder(t, "h-c");
  const bus = await t.context.connect("w2");
  const meter = new UnitTrafficMeter(bus);
  const prober = new RouteProber({ self: "w2", site: "s-a", peers: { "h-c": { site: "s-c" } }, intervalMs: 3_600_000, budgetBytesPerInterval: 1000, pings: 1 }, { transport: meter, clock: systemClock, meter });
  prober.endpoint.start();
  t.teardown(() => prober.stop());
  for (let i = 0; i < 10; i++) meter.publish(unitSubject("h-c", "v1", "l0"), new Uint8Array(10_000));
  const m = await prober.probeOnce();
  t.is(m.routes.length, 1);
  t.true(m.routes[0]!.loadBytesPerSec > 0);
  const again = await prober.probeOnce();
  t.is(again.routes[0]!.loadBytesPerSec, 0, "the meter restarts each interval");
});

test("a peer that answers no ping is left out of the measurements and counted", async (t) => {
  const bus = await t.context.connect("w3");
  const counters = new Counters();
  const prober = new RouteProber({ self: "w3", site: "s-a", peers: { "h-silent": { site: "s-x" } }, intervalMs: 3_600_000, budgetBytesPerInterval: 10_000, pings: 2, timeoutMs: 200 }, { transport: bus, clock: systemClock, counters });
  prober.endpoint.start();
  t.teardown(() => prober.stop());
  const m = await prober.probeOnce();
  t.deepEqual(m.routes, []);
  t.is(counters.get("route_probe_unanswered"), 1);
});

test("a malformed probe is counted and answered with nothing", async (t) => {
  const holder = await answeringHolder(t, "h-d");
  const bus = await t.context.connect("attacker");
  let answers = 0;
  bus.subscribe(probeSubject("attacker"), () => answers++);
  bus.publish(probeSubject("h-d"), new Uint8Array([1, 2, 3]));
  await bus.flush();
  for (let i = 0; i < 200 && holder.counters.get("route_probe_malformed") === 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.is(holder.counters.get("route_probe_malformed"), 1);
  t.is(answers, 0);
});
