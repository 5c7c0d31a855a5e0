import test from "ava";
import { mkdtemp, rm, stat, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Arena } from "../../arena/arena.ts";
import { LaneArenaSpill } from "../../actors/lane-arena/lane-arena-spill.ts";
import { SpillStream } from "../../arena/spill-stream.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { CountingFileLayer, ManualClock, unit, until } from "../arena/fixtures.ts";

const KiB = 1024;
const geometry = { segmentBytes: 8 * KiB, maxUnitBytes: 2 * KiB, initialBytes: 256 * KiB, incrementBytes: 64 * KiB, hardLimitBytes: 512 * KiB, manifestReserveBytes: 8 * KiB, growthLowWaterBytes: 16 * KiB };

async function tempFile(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "arena-spill-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, "spill.log");
}

/** An arena holding `segments` sealed segments on lanes l0/l1 of volumes v0/v1, ~1.5 KiB units. */
function filledArena(clock: ManualClock, segments: number) {
  const arena = new Arena(geometry, clock);
  const seqs = new Map<string, number>();
  const ids: number[] = [];
  for (let s = 0; s < segments; s++) {
    const volume = `v${s % 2}`;
    const lane = `l${(s >> 1) % 2}`;
    arena.grant(volume, lane, 4 * 1600);
    let seq = seqs.get(volume + lane) ?? 1;
    for (let i = 0; i < 4; i++, seq++) arena.append(unit(seq, seq, 1500, lane, volume));
    seqs.set(volume + lane, seq);
    ids.push(arena.seal(volume, lane).segmentId!);
  }
  return { arena, ids };
}

test("a receive → release cycle that never spilled makes zero disk writes", async (t) => {
  const clock = new ManualClock();
  const files = new CountingFileLayer(nodeFileLayer);
  const { arena, ids } = filledArena(clock, 6);
  const spiller = new LaneArenaSpill(arena, files, await tempFile(t), clock);
  t.is(arena.report().ramBytes, 6 * 8 * KiB);
  for (const v of ["v0", "v1"]) for (const l of ["l0", "l1"]) arena.release(v, l, RangeSet.of(1, 1000));
  t.is(arena.report().ramBytes, 0, "every segment was recycled");
  t.deepEqual(ids.map((id) => arena.segmentsOf("v0", "l0").includes(id)), ids.map(() => false));
  t.deepEqual(files.counts, { opens: 0, writes: 0, writtenBytes: 0, datasyncs: 0, readBytes: 0 });
  await spiller.close();
});
test("spill evidence exists only after datasync completes, then RAM is recycled at disk residency", async (t) => {
  const clock = new ManualClock();
  const files = new CountingFileLayer(nodeFileLayer);
  const { arena, ids } = filledArena(clock, 3);
  const spiller = new LaneArenaSpill(arena, files, await tempFile(t), clock);
  let open!: () => void;
  files.syncGate = new Promise<void>((r) => (open = r));
  const outcome = spiller.spill(ids, 5_000);
  await until(() => files.counts.writes === 3 && clock.pending === 1);
  t.is(files.counts.datasyncs, 0);
  t.is(arena.report().diskBytes, 0, "written but not synced: no evidence, still in RAM");
  t.is(arena.report().ramBytes, 3 * 8 * KiB);
  clock.advance(10);
  open();
  const r = await outcome;
  t.is(r.kind, "spilled");
  t.deepEqual(r.segmentIds.sort(), [...ids].sort());
  t.is(files.counts.datasyncs, 1);
  t.is(arena.report().ramBytes, 0);
  t.true(arena.report().diskBytes > 0);
  const ev = arena.describe(ids[0]!).evidence!;
  t.is(ev.syncedAt, 1_000_010);
  t.is(ev.offset, 0);
  t.is(arena.describe(ids[0]!).pinsOf("custody_obligation"), 1, "custody continues on disk");
  await spiller.close();
});
test("spilled ranges read back identical, and export straight from disk for a transfer", async (t) => {
  const clock = new ManualClock();
  const { arena, ids } = filledArena(clock, 4);
  const before = ids.map((id) => arena.units(id).map((u) => ({ ...u, payload: Buffer.from(u.payload), digest: Buffer.from(u.digest) })));
  const spiller = new LaneArenaSpill(arena, nodeFileLayer, await tempFile(t), clock);
  t.is((await spiller.spill(ids, 5_000)).kind, "spilled");
  for (const [i, id] of ids.entries()) {
    const back = (await spiller.readBack(id)).map((u) => ({ ...u, payload: Buffer.from(u.payload), digest: Buffer.from(u.digest) }));
    t.deepEqual(back, before[i]);
  }
  const dst = new Arena(geometry, clock);
  const imported = dst.importSegment(await spiller.exportSpilled(ids[1]!));
  t.is(imported.volume, "v1");
  t.deepEqual(dst.units(imported.segmentId).map((u) => u.firstSeq), before[1]!.map((u) => u.firstSeq));
  await spiller.close();
});
test("spill → crash with a torn tail → reopen keeps every synced record and drops the tail", async (t) => {
  const clock = new ManualClock();
  const path = await tempFile(t);
  const { arena, ids } = filledArena(clock, 5);
  const spiller = new LaneArenaSpill(arena, nodeFileLayer, path, clock);
  t.is((await spiller.spill(ids.slice(0, 4), 5_000)).kind, "spilled");
  const synced = ids.slice(0, 4).map((id) => arena.describe(id).evidence!);
  const syncedEnd = (await stat(path)).size;
  // The fifth record is written, then the process dies mid-write (before any sync).
  const s = (await SpillStream.open(nodeFileLayer, path, clock)).stream;
  await s.append("v0", "l0", 100, 104, arena.exportSegment(ids[4]!));
  await s.close();
  await spiller.close();
  await truncate(path, syncedEnd + 700);

  const reopened = await SpillStream.open(nodeFileLayer, path, clock);
  t.is(reopened.recovered.length, 4);
  t.is(reopened.droppedBytes, 700);
  t.deepEqual(reopened.recovered.map((r) => [r.info.offset, r.info.length]), synced.map((e) => [e.offset, e.length]));
  t.is((await stat(path)).size, syncedEnd, "the torn tail is truncated away");
  for (const e of synced) t.truthy((await reopened.stream.read(e.offset, e.length)).body.length);
  // New appends continue right after the last good record.
  const info = await reopened.stream.append("v0", "l0", 200, 200, new Uint8Array(10));
  t.is(info.offset, syncedEnd);
  await reopened.stream.close();
});
test("a missed flush deadline is reported, is not persistence, and a later flush covers the records", async (t) => {
  const clock = new ManualClock();
  const files = new CountingFileLayer(nodeFileLayer);
  const { arena, ids } = filledArena(clock, 2);
  const spiller = new LaneArenaSpill(arena, files, await tempFile(t), clock);
  let open!: () => void;
  files.syncGate = new Promise<void>((r) => (open = r));
  const first = spiller.spill(ids, 50);
  await until(() => clock.pending === 1);
  clock.advance(50);
  const missed = await first;
  t.is(missed.kind, "deadline_missed");
  t.deepEqual(missed.segmentIds.sort(), [...ids].sort());
  t.is(arena.report().diskBytes, 0, "no evidence: custody stays in RAM");
  t.is(arena.report().ramBytes, 2 * 8 * KiB);
  t.is(arena.describe(ids[0]!).evidence, undefined);
  // The disk catches up; the next flush (nothing new to write) produces the evidence.
  open();
  await until(() => files.counts.datasyncs === 1);
  files.syncGate = undefined;
  const later = await spiller.spill([], 50);
  t.is(later.kind, "spilled");
  t.deepEqual(later.segmentIds.sort(), [...ids].sort());
  t.is(arena.report().ramBytes, 0);
  t.is(files.counts.writes, 2, "the records were written once");
  await spiller.close();
});
