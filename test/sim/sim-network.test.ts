import test from "ava";
import { seededRandom } from "../../core/random.ts";
import { SimNetwork, type EdgeProfile, type NetEvent } from "../../sim/sim-network.ts";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { TransportError } from "../../transport/transport-error.ts";
import type { InboundMessage } from "../../transport/transport.ts";

function world(edge: Partial<EdgeProfile> = {}, seed = 1) {
  const clock = new SimulatedClock();
  const events: NetEvent[] = [];
  const net = new SimNetwork({ clock, random: seededRandom(seed).fork("net"), defaultEdge: edge, onEvent: (e) => events.push(e) });
  const a = net.endpoint("a", "east");
  const b = net.endpoint("b", "west");
  const got: Array<{ at: number; msg: InboundMessage }> = [];
  b.subscribe("x.>", (msg) => got.push({ at: clock.now(), msg }));
  return { clock, net, a, b, got, events };
}
const u8 = (n: number) => new Uint8Array(n);

test("latency delays delivery in virtual time and bandwidth adds serialization delay by size", (t) => {
  const w = world({ latencyMs: 40, bandwidthBytesPerSec: 1_000_000 });
  w.a.publish("x.1", u8(10_000)); // 10 ms on the wire
  w.a.publish("x.2", u8(10_000)); // queued behind the first: departs at 20 ms
  w.clock.advanceTo(49);
  t.is(w.got.length, 0);
  w.clock.runUntilIdle();
  t.deepEqual(w.got.map((g) => g.at), [50, 60]);
});

test("jitter never reorders one publisher's messages on one subscription", (t) => {
  const w = world({ latencyMs: 5, jitterMs: 50 });
  for (let i = 0; i < 200; i++) w.a.publish("x.s", Uint8Array.of(i));
  w.clock.runUntilIdle();
  t.deepEqual(w.got.map((g) => g.msg.data[0]), Array.from({ length: 200 }, (_, i) => i));
  t.true(new Set(w.got.map((g) => g.at)).size > 1, "arrivals spread over time");
});

test("reordering lets messages overtake each other", (t) => {
  const w = world({ latencyMs: 5, reorder: 0.3, reorderWindowMs: 100 });
  for (let i = 0; i < 200; i++) w.a.publish("x.s", Uint8Array.of(i));
  w.clock.runUntilIdle();
  const order = w.got.map((g) => g.msg.data[0]!);
  t.is(order.length, 200);
  t.notDeepEqual(order, [...order].sort((x, y) => x - y));
});

test("loss drops and duplication repeats deliveries at about the configured rates", (t) => {
  const w = world({ loss: 0.2, duplicate: 0.1 });
  for (let i = 0; i < 2000; i++) w.a.publish("x.s", Uint8Array.of(i & 0xff));
  w.clock.runUntilIdle();
  const lost = w.net.counters.get("drop_loss");
  const dup = w.net.counters.get("duplicate");
  t.true(lost > 300 && lost < 500, `lost ${lost}`);
  t.true(dup > 100 && dup < 220, `dup ${dup}`);
  t.is(w.got.length, 2000 - lost + dup);
});

test("a partition drops messages both ways, including those in flight, until healed", (t) => {
  const w = world({ latencyMs: 10 });
  const back: InboundMessage[] = [];
  w.a.subscribe("y", (m) => back.push(m));
  w.a.publish("x.inflight", u8(1));
  const cut = w.net.partition(["east"], ["west"]);
  w.a.publish("x.cut", u8(1));
  w.b.publish("y", u8(1));
  w.clock.runUntilIdle();
  t.is(w.got.length, 0);
  t.is(back.length, 0);
  t.is(w.net.counters.get("drop_partition"), 3);
  w.net.heal(cut);
  w.a.publish("x.healed", u8(1));
  w.clock.runUntilIdle();
  t.deepEqual(w.got.map((g) => g.msg.subject), ["x.healed"]);
});

test("a crashed endpoint loses messages in flight and its pending requests fail; a restart attaches fresh", async (t) => {
  const w = world({ latencyMs: 10 });
  w.a.publish("x.1", u8(1));
  const pending = w.b.request("x.self", u8(1), { timeoutMs: 1000 });
  w.net.crash("b");
  w.clock.runUntilIdle();
  t.is(w.got.length, 0);
  t.is((await t.throwsAsync(pending, { instanceOf: TransportError }))?.code, "failed");
  t.is(t.throws(() => w.b.publish("x.1", u8(1)), { instanceOf: TransportError })?.code, "closed");
  const b2 = w.net.endpoint("b", "west");
  const again: InboundMessage[] = [];
  b2.subscribe("x.*", (m) => again.push(m));
  w.a.publish("x.2", u8(1));
  w.clock.runUntilIdle();
  t.is(again.length, 1);
});

test("a request times out in virtual time when the reply is lost to a partition", async (t) => {
  const w = world({ latencyMs: 10 });
  w.b.subscribe("svc", (m) => w.b.respond(m, u8(1)));
  w.net.partition(["east"], ["west"]);
  const p = w.a.request("svc", u8(1), { timeoutMs: 500 });
  w.clock.runUntilIdle();
  t.is((await t.throwsAsync(p, { instanceOf: TransportError }))?.code, "timeout");
  t.is(w.clock.now(), 500);
});

test("invalid subjects are rejected with code invalid_subject", (t) => {
  const w = world();
  for (const f of [() => w.a.publish("x.*", u8(1)), () => w.a.publish("a..b", u8(1)), () => w.a.subscribe("a.>.b", () => {}), () => w.a.publish("", u8(1))]) {
    t.is(t.throws(f, { instanceOf: TransportError })?.code, "invalid_subject");
  }
});

test("the same seed gives the same event sequence; another seed differs", (t) => {
  const run = (seed: number) => {
    const w = world({ latencyMs: 3, jitterMs: 20, loss: 0.1, duplicate: 0.05, reorder: 0.1, reorderWindowMs: 30 }, seed);
    for (let i = 0; i < 300; i++) w.a.publish(`x.${i % 7}`, u8(i));
    w.clock.runUntilIdle();
    return JSON.stringify(w.events);
  };
  t.is(run(9), run(9));
  t.not(run(9), run(10));
});
