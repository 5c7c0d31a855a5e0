import anyTest, { type TestFn } from "ava";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { eventually, holderConfig, KeyRing, launchHolder, transport, unit, Writer } from "./holder-fixture.ts";
import { SimPreservedRam } from "../../sim/preserved-ram.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const UNITS = 200;
const BYTES = 8 * 1024;

test.serial("memory pressure transfers custody to a neighbor: memory stays bounded, nothing is lost, and the neighbor's receipt precedes every local release", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  // The neighbor serves another volume; it takes custody of vol1/l0 only by transfer.
  const n = await launchHolder(url, keys, holderConfig("h-neighbor", {
    lanes: [{ volume: "other", lane: "l0", upstream: ["w9"], downstream: [] }],
    arena: { segmentBytes: 64 * 1024, limitBytes: 8 * 1024 * 1024, maxOutstandingCredit: 256 * 1024, maxUnitBytes: 16 * 1024 },
  }));
  const o = await launchHolder(url, keys, holderConfig("h-origin", {
    arena: { segmentBytes: 64 * 1024, limitBytes: 512 * 1024, maxOutstandingCredit: 128 * 1024, maxUnitBytes: 16 * 1024 },
    transferNeighbor: "h-neighbor",
    pressureRatio: 0.5,
  }));
  const wt = await transport(url, "writer");
  const w = new Writer(wt, "h-origin");
  const lane = () => o.holder.lane("vol1", "l0")!;
  let maxRam = 0;
  const sampler = setInterval(() => (maxRam = Math.max(maxRam, lane().arenaReport().ramBytes)), 2);
  try {
    for (let s = 1; s <= UNITS; s++) w.send(unit(s, 1, BYTES));
    const nLane = () => n.holder.lane("vol1", "l0");
    await eventually(() => w.sender.backlog.units === 0 && lane().retained.union(nLane()?.retained ?? RangeSet.EMPTY).covers(1, UNITS), "all units in custody somewhere", 20_000, () =>
      JSON.stringify({
        origin: lane().retained.toString(),
        neighbor: nLane()?.retained.toString(),
        inTransfer: lane().inTransfer.toString(),
        backlog: w.sender.backlog,
        window: w.sender.state,
        arena: lane().arenaReport(),
        origin_counters: o.holder.counters.snapshot(),
        neighbor_counters: n.holder.counters.snapshot(),
      }),
    );
    clearInterval(sampler);

    const capacity = lane().arenaReport().capacityBytes;
    t.true(UNITS * BYTES > 2 * capacity, "the stream was far larger than the origin's memory");
    t.true(maxRam <= capacity, `origin RAM peaked at ${maxRam} <= ${capacity}`);
    const moved = RangeSet.from(o.log.filter((e) => e.type === "transferred_out").flatMap((e) => RangeSet.from(parse((e as { seqs: string }).seqs)).ranges()));
    t.false(moved.isEmpty, "custody was transferred");
    t.true(nLane()!.retained.coversAll(moved), "the neighbor holds everything the origin gave up");
    t.true(lane().retained.intersect(moved).isEmpty);

    // Every local release by transfer came after a neighbor receipt covering it.
    let covered = RangeSet.EMPTY;
    for (const e of o.log) {
      if (e.type === "neighbor_receipt") covered = covered.union(RangeSet.from(parse(e.retained)));
      if (e.type === "transferred_out") t.true(covered.coversAll(RangeSet.from(parse(e.seqs))), `release of ${e.seqs} preceded by the neighbor's receipt`);
    }
    t.is(o.holder.counters.get("credit_exceeded"), 0);
    t.false(Object.keys({ ...o.holder.counters.snapshot(), ...n.holder.counters.snapshot() }).some((k) => k.startsWith("internal_error")));
  } finally {
    clearInterval(sampler);
    w.sender.close();
    await wt.close();
    await o.close();
    await n.close();
  }
});

// Sim seed 960179: a protected-RAM holder restarted from its preserved memory without the ranges it
// had taken by transfer, though its receipts had claimed them; the release elsewhere left a hole no one
// could refill.
test.serial("units a holder admits by custody transfer are mirrored into its preserved memory like units from the writer", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const preserved = new SimPreservedRam();
  const n = await launchHolder(url, keys, holderConfig("h-neighbor", {
    lanes: [{ volume: "other", lane: "l0", upstream: ["w9"], downstream: [] }],
    arena: { segmentBytes: 64 * 1024, limitBytes: 8 * 1024 * 1024, maxOutstandingCredit: 256 * 1024, maxUnitBytes: 16 * 1024 },
  }), { preserved });
  const o = await launchHolder(url, keys, holderConfig("h-origin", {
    arena: { segmentBytes: 64 * 1024, limitBytes: 512 * 1024, maxOutstandingCredit: 128 * 1024, maxUnitBytes: 16 * 1024 },
    transferNeighbor: "h-neighbor",
    pressureRatio: 0.5,
  }));
  const wt = await transport(url, "writer");
  const w = new Writer(wt, "h-origin");
  const nLane = () => n.holder.lane("vol1", "l0");
  try {
    for (let s = 1; s <= 120; s++) w.send(unit(s, 1, BYTES));
    await eventually(() => w.sender.backlog.units === 0 && (nLane()?.retained.count ?? 0) > 0 && o.log.some((e) => e.type === "transferred_out"), "custody moved to the neighbor", 20_000);
    const taken = nLane()!.retained;
    t.false(taken.isEmpty);
    t.true(preserved.held.coversAll(taken), `preserved ${preserved.held.toString()} covers the transferred ${taken.toString()}`);
    const recovered = await preserved.recovered();
    t.true(recovered.every((u) => u.volume === "vol1" && u.lane === "l0"));
  } finally {
    w.sender.close();
    await wt.close();
    await o.close();
    await n.close();
  }
});

/** Parses RangeSet.toString() output ("1-5,7") back into pairs. */
function parse(s: string): [number, number][] {
  if (s === "∅") return [];
  return s.split(",").map((p) => {
    const [a, b] = p.split("-").map(Number);
    return [a!, b ?? a!];
  });
}
