import test from "ava";
import { edgeBetween, loadDeployment, siteOfActor, type Deployment } from "../../tools/demo/deployment.ts";
import { LinkQueue, LinkProfileError, ShapedTransport, unitDestination, type LinkRoute } from "../../transport/link-shaper.ts";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { unitSubject, receiptSubject } from "../../transport/protocol/subjects.ts";
import type { InboundMessage, Transport } from "../../transport/transport.ts";

/** An inner transport that records when (on the simulated clock) each publish reached it. */
function recorder(clock: SimulatedClock): { t: Transport; sent: { subject: string; at: number }[] } {
  const sent: { subject: string; at: number }[] = [];
  const t: Transport = {
    name: "rec",
    publish: (subject) => void sent.push({ subject, at: clock.now() }),
    subscribe: () => ({ subject: "x", unsubscribe: () => undefined, drain: async () => undefined }),
    request: async () => ({}) as InboundMessage,
    respond: () => undefined,
    flush: async () => undefined,
    close: async () => undefined,
  };
  return { t, sent };
}

/* The demo's running processes get their routes from their role configs (actors/runtime/role-links.ts);
   these tests build the same routes straight from the example deployment's edges. */
/**
 * The link route of a process at `fromSite`: units to a holder at another site take the declared
 * edge between the two sites; units inside one site, to unknown holders, over undeclared edges,
 * and every other subject go unshaped. Pure.
 */
function deploymentRoute(d: Deployment, fromSite: string): LinkRoute {
  return (subject) => {
    const toHolder = unitDestination(subject);
    if (toHolder === undefined) return undefined;
    const toSite = siteOfActor(d, toHolder);
    if (toSite === undefined || toSite === fromSite) return undefined;
    const e = edgeBetween(d, fromSite, toSite);
    if (e === undefined) return undefined;
    return { toSite, toHolder, profile: { latencyMs: e.latencyMs, jitterMs: e.jitterMs, bytesPerMs: e.bandwidthMBps * 1000 } };
  };
}

const d = loadDeployment(new URL("../../examples/deployment.json", import.meta.url).pathname);

test("a unit sent to the waypoint and to the far region at once reaches the waypoint first, each after exactly its edge's latency plus serialization", (t) => {
  const clock = new SimulatedClock({ startMs: 1000 });
  const { t: inner, sent } = recorder(clock);
  const shaped = new ShapedTransport(inner, { fromSite: "s-w", route: deploymentRoute(d, "s-w"), clock, random: () => 0 });
  const data = new Uint8Array(100_000);
  shaped.publish(unitSubject("h-usw", d.volume, d.lane), data);
  shaped.publish(unitSubject("h-wp", d.volume, d.lane), data);
  t.deepEqual(sent, [], "nothing leaves before its link delay");
  clock.runUntilIdle();
  t.deepEqual(sent.map((s) => s.subject), [unitSubject("h-wp", d.volume, d.lane), unitSubject("h-usw", d.volume, d.lane)]);
  // waypoint edge: 6 ms + 100 kB at 100 MB/s = 1 ms; us-west: 35 ms + 1 ms.
  t.is(sent[0]!.at - 1000, 7);
  t.is(sent[1]!.at - 1000, 36);
  t.is(shaped.stats.shaped, 2);
});

test("units on one link queue behind each other at the link's rate and never overtake", (t) => {
  const q = new LinkQueue({ latencyMs: 10, jitterMs: 5, bytesPerMs: 1000 });
  const a = q.schedule(0, 5000, 0.99); // serializes 0..5, lands ~19.95
  const b = q.schedule(0, 1000, 0); // serializes 5..6, would land 16: held behind a
  const c = q.schedule(100, 1000, 0); // link idle again: 100 + 1 + 10
  t.true(b >= a);
  t.is(c, 111);
});

test("an impossible link profile is refused with a typed error", (t) => {
  const err = t.throws(() => new LinkQueue({ latencyMs: -1, jitterMs: 0, bytesPerMs: 1 }));
  t.true(err instanceof LinkProfileError);
  t.is((err as LinkProfileError).code, "invalid_link_profile");
});

test("receipts, credits and same-site units pass through unshaped", (t) => {
  const clock = new SimulatedClock();
  const { t: inner, sent } = recorder(clock);
  const shaped = new ShapedTransport(inner, { fromSite: "s-w", route: deploymentRoute(d, "s-w"), clock, random: () => 0 });
  shaped.publish(receiptSubject(d.volume, d.lane), new Uint8Array(10));
  t.is(sent.length, 1);
  const e1 = new ShapedTransport(inner, { fromSite: "s-e1", route: deploymentRoute(d, "s-e1"), clock, random: () => 0 });
  e1.publish(unitSubject("h-e1", d.volume, d.lane), new Uint8Array(10));
  t.is(sent.length, 2);
});
