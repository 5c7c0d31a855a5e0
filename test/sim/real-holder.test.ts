/**
 * The real Holder actor (actors/holder) over the simulated world: SimNetwork endpoints as its
 * Transport and a SimulatedClock as its XState clock. Virtual time auto-advances, so the holder's
 * timers (receipt batching, credit retries, refresh) run in virtual time.
 */
import test from "ava";
import { unitRecordBytes } from "../../arena/segment.ts";
import { startHolder } from "../../actors/holder/holder.ts";
import { releaseFrontierSpec } from "../../transport/protocol/wire/holder-messages.ts";
import { seededRandom } from "../../core/random.ts";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { EventTrace } from "../../sim/event-trace.ts";
import { SimNetwork } from "../../sim/sim-network.ts";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { CreditSender } from "../../actors/hop/index.ts";
import { receiptSubject, releaseSubject } from "../../transport/protocol/subjects.ts";
import { decodeMessage, encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { holderConfig, KeyRing, LANE, unit, VOLUME } from "../holder/holder-fixture.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";

const UNITS = 60;

/** Runs writer → ha → hb over a SimNetwork with cross-AZ latency and jitter; returns what was receipted. */
async function chain(seed: number, opts: { startMs?: number; jitterMs?: number } = {}) {
  const clock = new SimulatedClock({ autoAdvance: true, startMs: opts.startMs ?? 1_700_000_000_000 });
  const trace = new EventTrace();
  const net = new SimNetwork({
    clock,
    random: seededRandom(seed).fork("net"),
    defaultEdge: { latencyMs: 1.5, jitterMs: opts.jitterMs ?? 3 },
    onEvent: (e) => trace.hashNet(e.atMs - 1_700_000_000_000, e.kind, e.from, e.to, e.subject),
  });
  const keys = new KeyRing();
  const receipted = new Map<string, RangeSet>();
  const watcher = net.endpoint("watcher", "s-ctrl");
  watcher.subscribe(receiptSubject(VOLUME, LANE), (m) => {
    const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m.data).body);
    let got = receipted.get(b.holder.holderId) ?? RangeSet.EMPTY;
    for (const r of b.receipts) got = got.union(r.retained);
    receipted.set(b.holder.holderId, got);
  });
  const start = (id: string, site: string, cfg: Parameters<typeof holderConfig>[1]) => {
    keys.add(id);
    return startHolder(holderConfig(id, cfg), { transport: net.endpoint(id, site), clock, privateKey: keys.privateKey(id), peers: keys });
  };
  const hb = await start("hb", "s-b", { upstream: ["ha"] });
  const ha = await start("ha", "s-a", { downstream: ["hb"] });
  const wt = net.endpoint("w1", "s-w");
  const sender = new CreditSender({ transport: wt, clock, sender: "w1", holder: "ha", volume: VOLUME, lane: LANE, retryMs: 20 }).attach();
  for (let s = 1; s <= UNITS; s++) {
    const u = unit(s, 1, 2048);
    sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
  }
  const t0 = clock.now();
  const deadline = Date.now() + 20_000;
  while (!["ha", "hb"].every((h) => receipted.get(h)?.covers(1, UNITS))) {
    if (Date.now() > deadline) throw new Error(`not receipted: ${JSON.stringify([...receipted].map(([h, r]) => [h, r.toString()]))}`);
    await new Promise((r) => setImmediate(r));
  }
  const virtualMs = clock.now() - t0;
  // A release frontier from the (simulated) controller empties both holders.
  for (const h of ["hb", "ha"]) {
    wt.publish(releaseSubject(h), encodeMessage(releaseFrontierSpec, { holder: h, volume: VOLUME, lane: LANE, ranges: [[1, UNITS]], epoch: 0, controlSeq: 1 }));
  }
  while (!(ha.empty() && hb.empty())) {
    if (Date.now() > deadline) throw new Error("release did not empty the holders");
    await new Promise((r) => setImmediate(r));
  }
  await ha.stop();
  await hb.stop();
  clock.setAutoAdvance(false);
  return { receipted, virtualMs, delivered: net.counters.get("deliver"), traceHash: trace.digest() };
}

test("the real Holder actor runs over SimNetwork and SimulatedClock: a 2-hop chain receipts every unit and releases on a frontier", async (t) => {
  const r = await chain(1);
  t.true(r.receipted.get("ha")!.covers(1, UNITS));
  t.true(r.receipted.get("hb")!.covers(1, UNITS));
  t.true(r.virtualMs > 0, "deliveries took virtual time");
  t.log(`virtual ${r.virtualMs.toFixed(1)} ms, ${r.delivered} deliveries`);
});

test("regression sim seeds 5, 10, 19: on a clock with fractional milliseconds a holder's receipt batches are still well-formed for every reader (they were dropped as malformed)", async (t) => {
  // Every instant of this run is x.25 ms: before, each batch's issuedAt failed the wire's integer check.
  const r = await chain(3, { startMs: 1_700_000_000_000.25, jitterMs: 0 });
  t.true(r.receipted.get("ha")!.covers(1, UNITS));
  t.true(r.receipted.get("hb")!.covers(1, UNITS));
});

test("the real Holder over the simulated world is deterministic: the same seed gives the same message trace", async (t) => {
  const a = await chain(7);
  const b = await chain(7);
  t.is(a.traceHash, b.traceHash);
  t.is(a.delivered, b.delivered);
  t.is(a.virtualMs, b.virtualMs);
});

test("a holder's timers are its machine's delayed events: refresh keeps firing while it serves, and none is left on the clock once it stopped", async (t) => {
  const clock = new SimulatedClock({ startMs: 1_700_000_000_000 });
  const net = new SimNetwork({ clock, random: seededRandom(7).fork("net"), defaultEdge: { latencyMs: 1, jitterMs: 0 } });
  const keys = new KeyRing();
  keys.add("ha");
  const started = startHolder(holderConfig("ha", {}), { transport: net.endpoint("ha", "s-a"), clock, privateKey: keys.privateKey("ha"), peers: keys });
  // Drive the start to its end, one timer at a time.
  let ha: Awaited<typeof started> | undefined;
  void started.then((h) => (ha = h));
  while (ha === undefined) {
    await new Promise((r) => setImmediate(r));
    clock.step();
  }
  const t0 = clock.now();
  for (let i = 0; i < 200; i++) {
    await new Promise((r) => setImmediate(r));
    clock.step();
  }
  t.true(clock.now() - t0 >= 1_000, "the refresh timer re-armed itself while serving");
  t.true(clock.pending > 0);
  await ha.stop();
  // Network deliveries already in flight may remain; the holder's own timers may not.
  while (clock.step()) await new Promise((r) => setImmediate(r));
  const after = clock.now();
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  t.is(clock.pending, 0, "nothing re-armed after the stop");
  t.is(clock.now(), after);
});
