import test from "ava";
import { Counters } from "../../core/index.ts";
import type { Clock } from "../../core/index.ts";
import { checkCoalescedStream } from "../../actors/writer/coalesced-stream.ts";
import { CoalescingConsumer, type DerivedUnitParts } from "../../actors/writer/coalescing-consumer.ts";
import { WriterConfigError, type VolumeWriterConfig } from "../../actors/writer/writer-config.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";

// The writer's coalescing consumer on its own: cadence by records and by age, the per-tick CPU
// budget, window splits that keep every record, and commit times that stay with their records.

function rig(spec: ConstructorParameters<typeof CoalescingConsumer>[0]) {
  let now = 1000;
  const clock: Clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => undefined };
  const counters = new Counters();
  const shipped: DerivedUnitParts[] = [];
  const c = new CoalescingConsumer(spec, { clock, counters, ship: (p) => shipped.push(p) });
  let seq = 0;
  const write = (lba: number, lane = "l0") => {
    seq++;
    c.note(lane, { seq, lsn: seq, lba, data: new Uint8Array(BLOCK_SIZE).fill(seq % 251) }, 5000 + seq);
  };
  return { c, counters, shipped, write, advance: (ms: number) => (now += ms) };
}

test("a window closes after windowRecords records and ships one derived unit over the raw range with only the newest block versions", (t) => {
  const r = rig({ holders: ["h"], windowRecords: 4 });
  for (const lba of [0, 1, 0, 0, 2, 2]) r.write(lba);
  t.is(r.shipped.length, 0, "nothing ships before a tick");
  r.c.tick();
  t.is(r.shipped.length, 1, "the open window of two records waits for its cadence");
  const [u] = r.shipped;
  t.like(u, { rawLane: "l0", lane: "l0-coalesced", firstSeq: 1, lastSeq: 4, commitTs: [5001, 5002, 5003, 5004] });
  t.deepEqual(u!.records.map((x) => [x.seq, x.lba]), [[2, 1], [4, 0]]);
  t.is(r.counters.get("coalesce_dropped_records"), 2);
  t.is(r.counters.get("coalesce_raw_bytes"), 4 * BLOCK_SIZE);
  t.is(r.counters.get("coalesce_derived_bytes"), 2 * BLOCK_SIZE);
});

test("windowMs closes a window by age; flush closes every open one and ships it", (t) => {
  const r = rig({ holders: ["h"], windowRecords: 100, windowMs: 50 });
  r.write(3);
  r.c.tick();
  t.is(r.shipped.length, 0);
  r.advance(50);
  r.c.tick();
  t.deepEqual(r.shipped.map((u) => [u.firstSeq, u.lastSeq]), [[1, 1]]);
  r.write(4);
  r.write(5, "l1");
  r.c.flush();
  t.deepEqual(r.shipped.map((u) => [u.lane, u.firstSeq, u.lastSeq]), [["l0-coalesced", 1, 1], ["l0-coalesced", 2, 2], ["l1-coalesced", 3, 3]]);
});

test("over the window budget a window is split, never truncated; windowsPerTick bounds the work of one tick and the rest waits in order", (t) => {
  const r = rig({ holders: ["h"], windowRecords: 10, maxWindowRecords: 3, windowsPerTick: 2 });
  for (let i = 0; i < 10; i++) r.write(i % 2);
  t.is(r.c.backlog(), 4);
  t.is(r.counters.get("coalesce_window_splits"), 3);
  r.c.tick();
  t.is(r.shipped.length, 2);
  t.is(r.counters.get("coalesce_backlog_ticks"), 1);
  r.c.tick();
  t.is(r.c.backlog(), 0);
  t.deepEqual(r.shipped.map((u) => [u.firstSeq, u.lastSeq]), [[1, 3], [4, 6], [7, 9], [10, 10]]);
  t.deepEqual(r.shipped.flatMap((u) => u.commitTs), Array.from({ length: 10 }, (_, i) => 5001 + i), "each piece carries its own records' commit times");
});

test("an impossible coalesced stream is a typed configuration error", (t) => {
  const base: VolumeWriterConfig = { writerId: "w", volume: "v", term: 1, lanes: [{ lane: "a", fromLba: 0, toLba: 9, holders: ["h"] }], contracts: [], holderSites: {}, topologyEpoch: 0, policyGeneration: 0 };
  t.notThrows(() => checkCoalescedStream(base));
  t.notThrows(() => checkCoalescedStream({ ...base, coalesced: { holders: ["img"], windowRecords: 8 } }));
  for (const coalesced of [
    { holders: [], windowRecords: 8 },
    { holders: ["img"], windowRecords: 0 },
    { holders: ["img"], windowRecords: 8, maxWindowBytes: 100 },
    { holders: ["img"], windowRecords: 8, laneSuffix: ".x" },
    { holders: ["img"], windowRecords: 8, laneSuffix: "" },
  ]) {
    const err = t.throws(() => checkCoalescedStream({ ...base, coalesced }), { instanceOf: WriterConfigError });
    t.is(err!.code, "invalid_writer_config");
  }
  t.throws(() => checkCoalescedStream({ ...base, custody: false, coalesced: { holders: ["img"], windowRecords: 8 } }), { instanceOf: WriterConfigError });
});

test("a volume of two lanes closes both lanes' windows together, only between writes, and offers each close's lane heads as the derived lanes' manifest", (t) => {
  let now = 1000;
  const clock: Clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => undefined };
  const shipped: DerivedUnitParts[] = [];
  const cuts: { lsn: number; lanes: Record<string, number> }[] = [];
  const heads = { a: 0, b: 0 };
  const c = new CoalescingConsumer({ holders: ["h"], windowRecords: 3, windowMs: 100 }, { clock, counters: new Counters(), ship: (p) => shipped.push(p), heads: () => ({ ...heads }), manifest: (cut) => cuts.push(structuredClone(cut)) });
  let lsn = 0;
  // A write of `lanes` pieces (one record per lane, same LSN), noted as the writer does.
  const write = (...lanes: ("a" | "b")[]) => {
    lsn++;
    lanes.forEach((lane, i) => {
      heads[lane]++;
      c.note(lane, { seq: heads[lane], lsn, lba: lane === "a" ? 0 : 10, data: new Uint8Array(BLOCK_SIZE).fill(lsn) }, now, i === lanes.length - 1);
    });
  };
  write("a");
  write("a");
  write("a", "b"); // the 3rd record arrives mid-write: no close until the write's last piece
  write("b");
  c.tick();
  t.deepEqual(shipped.map((u) => [u.lane, u.firstSeq, u.lastSeq]), [["a-coalesced", 1, 3], ["b-coalesced", 1, 1]], "both lanes closed after the write's 4th record, not inside it");
  t.deepEqual(cuts, [{ lsn: 3, lanes: { "a-coalesced": 3, "b-coalesced": 1 } }], "the manifest is the heads at the close");
  // An age close takes every lane with it; a lane without records keeps its earlier window end.
  write("b");
  now += 100;
  c.tick();
  t.deepEqual(shipped.slice(2).map((u) => [u.lane, u.firstSeq, u.lastSeq]), [["b-coalesced", 2, 3]]);
  t.deepEqual(cuts[cuts.length - 1], { lsn: 5, lanes: { "a-coalesced": 3, "b-coalesced": 3 } });
  // Every manifest names window ends only.
  const ends = new Map<string, Set<number>>();
  for (const u of shipped) ends.set(u.lane, (ends.get(u.lane) ?? new Set([0])).add(u.lastSeq));
  for (const cut of cuts) for (const [lane, seq] of Object.entries(cut.lanes)) t.true(ends.get(lane)!.has(seq), `${lane}:${seq} is a window end`);
});
