import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createActor } from "xstate";
import { LaneArenaInputError, laneArenaIngressLogic, laneArenaMachine, type LaneArenaEmitted, type LaneArenaInput } from "../../actors/lane-arena/lane-arena.machine.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { CountingFileLayer, ManualClock, unit, until } from "../arena/fixtures.ts";

const KiB = 1024;
const config = { segmentBytes: 8 * KiB, maxUnitBytes: 2 * KiB, initialBytes: 64 * KiB, incrementBytes: 16 * KiB, hardLimitBytes: 128 * KiB, manifestReserveBytes: 8 * KiB, growthLowWaterBytes: 8 * KiB, maxOpenDelayMs: 20 };

function start(extra: Partial<LaneArenaInput> = {}) {
  const clock = new ManualClock();
  const actor = createActor(laneArenaMachine, { clock, input: { config, clock, ...extra } });
  const seen: LaneArenaEmitted[] = [];
  actor.on("*", (e) => seen.push(e as LaneArenaEmitted));
  actor.start();
  const ctx = () => actor.getSnapshot().context;
  return { actor, clock, seen, ctx };
}

async function tempPath(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "lane-arena-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, "spill.log");
}

test("admit within credits updates the snapshot: bytes by residency, pins by reason, outstanding credits", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 2, 1000) });
  const r = ctx().report;
  t.is(r.ramBytes, 8 * KiB);
  t.is(r.ramStoredBytes, 1000 + 32 + 16);
  t.is(r.diskBytes, 0);
  t.is(r.pins.custody_obligation, 1);
  t.is(r.outstandingCredits, 4000 - 1048);
  t.deepEqual(ctx().lanes["v.l0"], { term: 1, retained: [[1, 2]], contiguousThrough: 2, holes: [] });
  t.like(seen.find((e) => e.type === "admitted"), { verdict: "accepted", firstSeq: 1, lastSeq: 2 });
  t.like(seen.find((e) => e.type === "granted"), { granted: 4000 });
});

test("an open segment seals when its max open delay passes on the actor's clock", (t) => {
  const { actor, clock, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 1000 });
  actor.send({ type: "admit", unit: unit(1, 1, 100) });
  t.is(ctx().report.segments.open, 1);
  clock.advance(19);
  t.is(ctx().report.segments.open, 1);
  clock.advance(1);
  t.deepEqual(ctx().report.segments, { open: 0, sealed: 1, spilled: 0 });
  t.like(seen.find((e) => e.type === "sealed"), { full: false });
});

test("a unit with a bad digest is rejected, counted, and changes nothing", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  const before = ctx().report;
  const u = unit(1, 1, 100);
  u.payload[0]! ^= 1;
  actor.send({ type: "admit", unit: u });
  t.like(seen.at(-1), { type: "rejected", request: "admit", code: "digest_mismatch" });
  t.is(ctx().arena.counters.get("digest_mismatch"), 1);
  t.deepEqual(ctx().report, before);
  t.deepEqual(ctx().lanes, {});
});

test("a frame's units admitted as one event are answered by one event with a verdict per unit, in order: a bad unit is refused alone and the others are stored", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  const bad = unit(2, 2, 100);
  bad.payload[0]! ^= 1;
  seen.length = 0;
  actor.send({ type: "admitMany", units: [{ unit: unit(1, 1, 100) }, { unit: bad }, { unit: unit(3, 3, 100) }, { unit: unit(1, 1, 100) }] });
  const answers = seen.filter((e) => e.type === "admittedMany");
  t.is(answers.length, 1);
  const results = answers[0]!.type === "admittedMany" ? answers[0]!.verdicts : [];
  t.deepEqual(
    results.map((e) => (e.type === "admitted" ? `${e.firstSeq}:${e.verdict}` : `rejected:${e.code}`)),
    ["1:accepted", "rejected:digest_mismatch", "3:held", "1:duplicate"],
  );
  t.is(ctx().arena.counters.get("digest_mismatch"), 1);
  t.deepEqual(ctx().lanes["v.l0"], { term: 1, retained: [[1, 1], [3, 3]], contiguousThrough: 1, holes: [[2, 2]] });
});

test("a stale-term unit is rejected with stale_term and custody is unchanged", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 1, 100, "l0", "v", 5) });
  const before = ctx().report;
  actor.send({ type: "admit", unit: unit(2, 2, 100, "l0", "v", 4) });
  t.like(seen.at(-1), { type: "rejected", code: "stale_term" });
  t.is(ctx().arena.counters.get("stale_term"), 1);
  t.deepEqual(ctx().report, before);
});

test("an out-of-order unit is held with its hole reported; a duplicate changes nothing", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 1, 100) });
  actor.send({ type: "admit", unit: unit(4, 5, 100) });
  t.like(seen.at(-1), { type: "admitted", verdict: "held", contiguousThrough: 1, holes: [[2, 3]] });
  const before = ctx().report;
  actor.send({ type: "admit", unit: unit(4, 5, 100) });
  t.like(seen.at(-1), { type: "admitted", verdict: "duplicate", segmentId: undefined });
  t.deepEqual(ctx().report, before);
});

test("release recycles a segment only after its last pin; pins are reported by reason", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 3, 500) });
  actor.send({ type: "seal", volume: "v", lane: "l0" });
  const id = ctx().arena.segmentsOf("v", "l0")[0]!;
  actor.send({ type: "pin", segmentId: id, reason: "pitr_pin" });
  actor.send({ type: "release", volume: "v", lane: "l0", ranges: [[1, 3]] });
  t.like(ctx().report.pins, { pitr_pin: 1, custody_obligation: 0 });
  t.is(ctx().report.ramBytes, 8 * KiB);
  actor.send({ type: "unpin", segmentId: id, reason: "pitr_pin" });
  t.is(ctx().report.ramBytes, 0);
  t.true(seen.some((e) => e.type === "recycled" && e.segmentId === id));
  t.deepEqual(ctx().lanes["v.l0"]!.retained, []);
});

test("receive → release without spill makes zero disk writes, even with a spill target configured", async (t) => {
  const files = new CountingFileLayer(nodeFileLayer);
  const { actor, ctx } = start({ spill: { files, path: await tempPath(t) } });
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 40_000 });
  for (let s = 1; s <= 20; s++) actor.send({ type: "admit", unit: unit(s, s, 1500) });
  actor.send({ type: "seal", volume: "v", lane: "l0" });
  actor.send({ type: "release", volume: "v", lane: "l0", ranges: [[1, 20]] });
  t.is(ctx().report.ramBytes, 0);
  t.deepEqual(files.counts, { opens: 0, writes: 0, writtenBytes: 0, datasyncs: 0, readBytes: 0 });
});

test("pressure spills sealed segments: custody continues at disk residency", async (t) => {
  const files = new CountingFileLayer(nodeFileLayer);
  const { actor, seen, ctx } = start({ spill: { files, path: await tempPath(t) }, flushDeadlineMs: 1000 });
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 40_000 });
  for (let s = 1; s <= 12; s++) actor.send({ type: "admit", unit: unit(s, s, 1500) });
  actor.send({ type: "seal", volume: "v", lane: "l0" });
  t.is(ctx().report.ramBytes, 3 * 8 * KiB);
  actor.send({ type: "pressure" });
  await until(() => seen.some((e) => e.type === "spilled"));
  t.is(ctx().report.ramBytes, 0);
  t.true(ctx().report.diskBytes > 12 * 1500);
  t.is(ctx().report.pins.custody_obligation, 3, "spilled segments are still in custody");
  t.is(files.counts.datasyncs, 1);
});

test("a missed flush deadline is reported by the actor and leaves custody in RAM", async (t) => {
  const files = new CountingFileLayer(nodeFileLayer);
  const { actor, clock, seen, ctx } = start({ spill: { files, path: await tempPath(t) }, flushDeadlineMs: 30 });
  let open!: () => void;
  files.syncGate = new Promise<void>((r) => (open = r));
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 1, 1500) });
  actor.send({ type: "seal", volume: "v", lane: "l0" });
  actor.send({ type: "spill" });
  await until(() => files.counts.writes === 1 && clock.pending === 1);
  clock.advance(30);
  await until(() => seen.some((e) => e.type === "flushDeadlineMissed"));
  t.is(ctx().flushDeadlineMisses, 1);
  t.is(ctx().report.diskBytes, 0);
  t.is(ctx().report.ramBytes, 8 * KiB);
  open();
});

test("a RAM-only arena refuses spill requests with no_spill_target", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "pressure" });
  t.like(seen.at(-1), { type: "rejected", code: "no_spill_target" });
  t.is(ctx().arena.counters.get("no_spill_target"), 1);
});

test("the next increment is secured before free space runs out, then credits flow again", async (t) => {
  const asked: number[] = [];
  const { actor, seen, ctx } = start({ acquireIncrement: async (bytes) => (asked.push(bytes), true) });
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 1_000_000 });
  const first = (seen.find((e) => e.type === "granted") as { granted: number }).granted;
  await until(() => seen.some((e) => e.type === "grown"));
  t.deepEqual(asked, [16 * KiB]);
  t.is(ctx().report.capacityBytes, 80 * KiB);
  actor.send({ type: "grant", volume: "v", lane: "l1", bytes: 5000 });
  t.like(seen.filter((e) => e.type === "granted").at(-1), { lane: "l1", granted: 5000 });
  t.true(first > 0);
});

test("export then import moves custody of a sealed segment between two actors", (t) => {
  const a = start();
  const b = start();
  a.actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  a.actor.send({ type: "admit", unit: unit(1, 2, 300) });
  a.actor.send({ type: "admit", unit: unit(3, 3, 300) });
  a.actor.send({ type: "seal", volume: "v", lane: "l0" });
  a.actor.send({ type: "export", segmentId: a.ctx().arena.segmentsOf("v", "l0")[0]! });
  const exported = a.seen.find((e) => e.type === "exported") as { bytes: Uint8Array };
  b.actor.send({ type: "import", bytes: exported.bytes });
  t.like(b.seen.at(-1), { type: "imported", seqs: [[1, 3]] });
  t.deepEqual(b.ctx().lanes["v.l0"]!.retained, [[1, 3]]);
  const bad = Buffer.from(exported.bytes);
  bad[30]! ^= 1;
  b.actor.send({ type: "import", bytes: bad });
  t.like(b.seen.at(-1), { type: "rejected", request: "import", code: "segment_format" });
});

test("an import that conflicts with the lane (stale term: at or above where a newer term begins) is refused whole and changes nothing", (t) => {
  const a = start();
  const b = start();
  a.actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  a.actor.send({ type: "admit", unit: unit(6, 7, 300, "l0", "v", 1) });
  a.actor.send({ type: "seal", volume: "v", lane: "l0" });
  a.actor.send({ type: "export", segmentId: a.ctx().arena.segmentsOf("v", "l0")[0]! });
  const exported = a.seen.find((e) => e.type === "exported") as { bytes: Uint8Array };
  b.actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  b.actor.send({ type: "admit", unit: unit(5, 5, 100, "l0", "v", 2) });
  const before = b.ctx().report;
  b.actor.send({ type: "import", bytes: exported.bytes });
  t.like(b.seen.at(-1), { type: "rejected", request: "import", code: "stale_term" });
  t.deepEqual(b.ctx().report, before);
  t.deepEqual(b.ctx().lanes["v.l0"]!.retained, [[5, 5]]);
});

test("the ingress-only twin a holder lane runs answers every ingress event exactly as the full machine does", (t) => {
  const script = [
    { type: "grant", volume: "v", lane: "l0", bytes: 6 * KiB, secure: true },
    { type: "admitMany", units: [{ unit: unit(1, 1) }, { unit: unit(2, 2) }, { unit: unit(2, 2) }], forwardPins: 1 },
    { type: "admit", unit: unit(9, 9, 3) },
    { type: "seal", volume: "v", lane: "l0" },
    { type: "release", volume: "v", lane: "l0", ranges: [[1, 1]] },
    { type: "release", volume: "v", lane: "l0", ranges: [[5, 2]] },
    { type: "revoke", volume: "v", lane: "l0" },
  ] as const;
  const emitted = (machine: typeof laneArenaMachine | typeof laneArenaIngressLogic) => {
    const clock = new ManualClock();
    const actor = createActor(machine, { clock, input: { config, clock, lanes: [{ volume: "v", lane: "l0" }], summaries: false, sealTimers: false } });
    const seen: LaneArenaEmitted[] = [];
    actor.on("*", (e) => seen.push(e));
    actor.start();
    for (const e of script) actor.send(e as Parameters<typeof actor.send>[0]);
    return JSON.parse(JSON.stringify(seen)) as unknown;
  };
  const full = emitted(laneArenaMachine);
  t.deepEqual(emitted(laneArenaIngressLogic), full);
  t.true(JSON.stringify(full).includes("admittedMany") && JSON.stringify(full).includes("rejected"), "the script covers admissions and a refusal");
});

test("the ingress-only lane arena refuses an input it cannot honour (seal timers, a spill target, a capacity source) with a typed error", (t) => {
  const base = { config, lanes: [{ volume: "v", lane: "l0" }], summaries: false, sealTimers: false } as const;
  const started = createActor(laneArenaIngressLogic, { input: base });
  t.is(started.getSnapshot().status, "active");
  for (const extra of [{ sealTimers: true }, { sealTimers: undefined }, { acquireIncrement: async () => true }] as const) {
    const actor = createActor(laneArenaIngressLogic, { input: { ...base, ...extra } });
    const snap = actor.getSnapshot();
    t.is(snap.status, "error", JSON.stringify(extra));
    t.true(snap.error instanceof LaneArenaInputError);
    t.is((snap.error as LaneArenaInputError).code, "invalid_input");
  }
  const stopped = createActor(laneArenaIngressLogic, { input: base });
  stopped.start();
  stopped.stop();
  t.is(stopped.getSnapshot().status, "stopped", "a stopped lane arena reads as stopped, as the statechart's does");
});
