import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createActor } from "xstate";
import { laneArenaMachine, laneLogOf, type LaneArenaEmitted, type LaneArenaInput } from "../../actors/lane-arena/lane-arena.machine.ts";
import { unitRecordBytes } from "../../arena/segment.ts";
import { SpillSet } from "../../arena/spill-set.ts";
import type { SpillEvidence } from "../../arena/spill-stream.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { ManualClock, unit } from "../arena/fixtures.ts";

// The requests a holder makes of the lane-arena actor that backs each of its lanes.

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

/** Writes `body` as one record of a real spill set and returns its evidence after an in-deadline sync. */
async function spilledRecord(t: { teardown(fn: () => Promise<void>): void }, clock: ManualClock, body: Uint8Array, first: number, last: number): Promise<SpillEvidence> {
  const dir = await mkdtemp(join(tmpdir(), "lane-arena-owner-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { set } = await SpillSet.open(nodeFileLayer, join(dir, "spill.log"), clock);
  const info = await set.append("v", "l0", first, last, body);
  const r = await set.flush(60_000);
  await set.close();
  if (r.kind !== "synced") throw new Error("the test's flush missed its deadline");
  return r.evidence.get(info)!;
}

test("a unit that opens a segment puts one in_flight_forward pin per forward edge on it; the next unit in that segment adds none", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 1, 100), forwardPins: 2 });
  t.like(seen.at(-1), { type: "admitted", opened: true, verdict: "accepted" });
  actor.send({ type: "admit", unit: unit(2, 2, 100), forwardPins: 2 });
  t.like(seen.at(-1), { type: "admitted", opened: false });
  t.like(ctx().report.pins, { in_flight_forward: 2, custody_obligation: 1 });
});

test("a secure grant first secures the next capacity increment when free space runs low; a plain grant never grows the arena", (t) => {
  const { actor, seen, ctx } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 1_000_000 });
  t.true(ctx().arena.wantsIncrement());
  actor.send({ type: "grant", volume: "v", lane: "l1", bytes: 1000 });
  t.is(ctx().arena.capacityBytes, 64 * KiB, "a plain grant does not grow the arena");
  actor.send({ type: "grant", volume: "v", lane: "l2", bytes: 1000, secure: true });
  t.is(ctx().arena.capacityBytes, 80 * KiB);
  t.like(seen.at(-1), { type: "granted", lane: "l2", granted: 1000 });
});

test("revoke answers with the unused credit it withdrew", (t) => {
  const { actor, seen } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 3000 });
  const u = unit(1, 1, 100);
  actor.send({ type: "admit", unit: u });
  actor.send({ type: "revoke", volume: "v", lane: "l0" });
  t.like(seen.at(-1), { type: "revoked", bytes: 3000 - unitRecordBytes(u) });
});

test("a segment found on disk at start is imported with its evidence: held in custody at disk residency, using no RAM, and the lane log retains it", async (t) => {
  const a = start();
  a.actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  for (let s = 1; s <= 3; s++) a.actor.send({ type: "admit", unit: unit(s, s, 300) });
  a.actor.send({ type: "seal", volume: "v", lane: "l0" });
  a.actor.send({ type: "export", segmentId: a.ctx().arena.segmentsOf("v", "l0")[0]! });
  const body = (a.seen.find((e) => e.type === "exported") as { bytes: Uint8Array }).bytes;
  const b = start({ lanes: [{ volume: "v", lane: "l0" }] });
  const evidence = await spilledRecord(t, b.clock, body, 1, 3);
  b.actor.send({ type: "import", bytes: body, evidence });
  t.like(b.seen.at(-1), { type: "imported", seqs: [[1, 3]] });
  t.is(b.ctx().report.ramBytes, 0);
  t.true(b.ctx().report.diskBytes > 0);
  t.is(b.ctx().report.pins.custody_obligation, 1);
  t.deepEqual(b.ctx().arena.describe(b.ctx().arena.segmentsOf("v", "l0")[0]!).evidence, evidence);
  t.deepEqual(b.ctx().lanes["v.l0"]!.retained, [[1, 3]]);
});

test("recordSpill moves a sealed segment to disk residency with its evidence; for a segment released meanwhile it changes nothing", async (t) => {
  const { actor, seen, ctx, clock } = start();
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 2, 500) });
  actor.send({ type: "seal", volume: "v", lane: "l0" });
  const id = ctx().arena.segmentsOf("v", "l0")[0]!;
  const evidence = await spilledRecord(t, clock, ctx().arena.exportSegment(id), 1, 2);
  actor.send({ type: "recordSpill", segmentId: id, evidence });
  t.like(seen.at(-1), { type: "spilled", segmentIds: [id] });
  t.is(ctx().report.ramBytes, 0);
  t.is(ctx().report.pins.custody_obligation, 1, "custody continues on disk");

  actor.send({ type: "admit", unit: unit(3, 3, 500) });
  actor.send({ type: "seal", volume: "v", lane: "l0" });
  const next = ctx().arena.segmentsOf("v", "l0").find((s) => s !== id)!;
  const later = await spilledRecord(t, clock, ctx().arena.exportSegment(next), 3, 3);
  actor.send({ type: "release", volume: "v", lane: "l0", ranges: [[3, 3]] });
  const before = ctx().report;
  const emitted = seen.length;
  actor.send({ type: "recordSpill", segmentId: next, evidence: later });
  t.is(seen.length, emitted, "nothing spilled");
  t.deepEqual(ctx().report, before);
});

test("without summaries the snapshot keeps its starting report while the arena and the lane log read live", (t) => {
  const { actor, seen, ctx } = start({ summaries: false, lanes: [{ volume: "v", lane: "l0" }] });
  const atStart = ctx().report;
  t.is(laneLogOf(ctx(), "v", "l0")!.retained.isEmpty, true, "a configured lane has its log from the start");
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 4000 });
  actor.send({ type: "admit", unit: unit(1, 1, 100) });
  const admitted = seen.at(-1)!;
  t.like(admitted, { type: "admitted", verdict: "accepted" });
  t.false("holes" in admitted, "no progress report is computed per unit");
  t.deepEqual(ctx().report, atStart);
  t.is(ctx().arena.report().ramBytes, 8 * KiB);
  t.is(laneLogOf(ctx(), "v", "l0")!.retained.toString(), "1");
});

test("a sealTimers-off actor leaves the open segment open past its max open delay (its owner decides when to seal)", (t) => {
  const { actor, clock, ctx } = start({ sealTimers: false });
  actor.send({ type: "grant", volume: "v", lane: "l0", bytes: 1000 });
  actor.send({ type: "admit", unit: unit(1, 1, 100) });
  clock.advance(1_000);
  t.is(ctx().report.segments.open, 1);
  t.is(clock.pending, 0, "no timer was set");
  actor.send({ type: "seal", volume: "v", lane: "l0" });
  t.deepEqual(ctx().report.segments, { open: 0, sealed: 1, spilled: 0 });
});
