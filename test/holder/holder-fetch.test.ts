import anyTest, { type TestFn } from "ava";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { encodeMessage, unitFetchSpec } from "../../transport/protocol/index.ts";
import { fetchSubject } from "../../transport/protocol/subjects.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { CountingFileLayer } from "../kit/counting-file-layer.ts";
import { eventually, holderConfig, KeyRing, launchHolder, settle, tempDir, transport, unit, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

test.serial("a holder serves fetch of its retained units from RAM and, once spilled, from its spill stream; a restart on the same spill file serves them again", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const dir = tempDir();
  const cfg = holderConfig("h-fetch", { residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 2_000 } });
  const h = await launchHolder(url, keys, cfg, { files: nodeFileLayer, spillPath: `${dir}/spill.log` });
  const wt = await transport(url, "writer-and-reader");
  const w = new Writer(wt, "h-fetch");
  const lane = () => h.holder.lane("vol1", "l0")!;
  try {
    for (let s = 1; s <= 30; s++) w.send(unit(s, 1, 4096));
    await eventually(() => lane().retained.covers(1, 30), "1-30 admitted");
    await eventually(() => lane().diskResident.covers(1, 30), "1-30 spilled", 5_000);
    t.is(lane().arenaReport().ramBytes, 0, "nothing left in RAM: every unit must come from disk");
    const units = await fetchUnits(wt, "h-fetch", "vol1", "l0", RangeSet.of(1, 30));
    t.deepEqual(units.map((u) => u.firstSeq), Array.from({ length: 30 }, (_, i) => i + 1));
    t.true(h.holder.counters.get("fetch_served_units") >= 30);
  } finally {
    w.sender.close();
    await settle(50);
    await h.close();
  }
  // Incarnation 2 on the same spill file: every record is custody again, and readable.
  const again = await launchHolder(url, keys, { ...cfg, incarnation: 2 }, { files: nodeFileLayer, spillPath: `${dir}/spill.log` });
  try {
    const l2 = again.holder.lane("vol1", "l0")!;
    t.is(l2.retained.toString(), "1-30");
    t.is(l2.diskResident.toString(), "1-30");
    const units = await fetchUnits(wt, "h-fetch", "vol1", "l0", RangeSet.of(1, 30));
    t.is(units.length, 30);
  } finally {
    await wt.close();
    await again.close();
  }
});

test.serial("a fetch page reads from disk about what it returns, not the whole range asked for (soak regression: bases never finished)", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const files = new CountingFileLayer();
  const cfg = holderConfig("h-paged", { residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 2_000 }, arena: { segmentBytes: 64 * 1024, limitBytes: 4 * 1024 * 1024, maxOutstandingCredit: 256 * 1024, maxUnitBytes: 32 * 1024 } });
  const h = await launchHolder(url, keys, cfg, { files, spillPath: `${tempDir()}/spill.log` });
  const wt = await transport(url, "paged-reader");
  const w = new Writer(wt, "h-paged");
  const lane = () => h.holder.lane("vol1", "l0")!;
  try {
    for (let s = 1; s <= 600; s++) w.send(unit(s, 1, 4096));
    await eventually(() => lane().diskResident.covers(1, 600), "1-600 spilled", 15_000);
    await eventually(() => lane().arenaReport().ramBytes === 0, "nothing left in RAM");
    const spilled = files.counts.writtenBytes;
    const before = files.counts.readBytes;
    const units = await fetchUnits(wt, "h-paged", "vol1", "l0", RangeSet.of(1, 600));
    t.is(units.length, 600);
    const read = files.counts.readBytes - before;
    t.log(`spilled ${spilled} bytes; a paged fetch of all of it read ${read}`);
    t.true(read <= 1.5 * spilled, `read ${read} bytes for ${spilled} spilled (every page re-reading the whole range would read ~5×)`);
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await h.close();
  }
});

test.serial("a fetch of 2,000 × 4 KiB units from one holder comes back whole, in pages under the server's max_payload", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const cfg = holderConfig("h-big", { residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 2_000 }, arena: { segmentBytes: 256 * 1024, limitBytes: 4 * 1024 * 1024, maxOutstandingCredit: 512 * 1024, maxUnitBytes: 32 * 1024 } });
  const h = await launchHolder(url, keys, cfg, { files: nodeFileLayer, spillPath: `${tempDir()}/spill.log` });
  const wt = await transport(url, "big-reader");
  const w = new Writer(wt, "h-big");
  try {
    for (let s = 1; s <= 2_000; s++) w.send(unit(s, 1, 4096));
    await eventually(() => h.holder.lane("vol1", "l0")?.retained.covers(1, 2_000) ?? false, "1-2000 retained", 30_000);
    // Count every reply's size on the way in.
    const replies: number[] = [];
    const counted = Object.create(wt) as typeof wt;
    counted.request = async (subject, data, opts) => {
      const r = await wt.request(subject, data, opts);
      replies.push(r.data.byteLength);
      return r;
    };
    const units = await fetchUnits(counted, "h-big", "vol1", "l0", RangeSet.of(1, 2_000));
    t.deepEqual(units.map((u) => u.firstSeq), Array.from({ length: 2_000 }, (_, i) => i + 1));
    const maxPayload = wt.maxPayloadBytes!()!;
    t.log(`${replies.length} replies, largest ${Math.max(...replies)} bytes; server max_payload ${maxPayload}`);
    t.true(replies.every((n) => n <= maxPayload), "no reply exceeds max_payload");
    t.true(replies.length >= Math.ceil((2_000 * 4096) / maxPayload), "the 8 MB came in several pages");
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await h.close();
  }
});

/**
 * A RAM-only holder `id` (arena as given) is sent units of `unitBytes` in the order of `seqs`; once
 * it retains them all, resolves with the first sequences a fetch of `ask` returns, in reply order.
 */
async function fetchAfterSending(url: string, id: string, arena: { segmentBytes: number; limitBytes: number; maxOutstandingCredit: number }, unitBytes: number, seqs: readonly number[], ask: RangeSet): Promise<number[]> {
  const h = await launchHolder(url, new KeyRing(), holderConfig(id, { residency: ["ram"], arena: { ...arena, maxUnitBytes: 32 * 1024 } }));
  const wt = await transport(url, `${id}-reader`);
  const w = new Writer(wt, id);
  try {
    for (const s of seqs) w.send(unit(s, 1, unitBytes));
    const all = seqs.reduce((r, s) => r.add(s, s), RangeSet.EMPTY);
    await eventually(() => h.holder.lane("vol1", "l0")?.retained.coversAll(all) ?? false, `${all.toString()} retained`, 15_000);
    return (await fetchUnits(wt, id, "vol1", "l0", ask)).map((u) => u.firstSeq);
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await h.close();
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test.serial("a fetch pages in sequence order when a segment mixes old and new sequences (chaos seed 1: the cursor jumped past 1,277 retained writes)", async (t) => {
  // 1-5, then 1000-1019 (as re-sent or reordered units land), then 6-400: the first segments mix them.
  const sent = [...range(1, 5), ...range(1000, 1019), ...range(6, 400)];
  const got = await fetchAfterSending(t.context.nats.url, "h-mixed", { segmentBytes: 64 * 1024, limitBytes: 8 * 1024 * 1024, maxOutstandingCredit: 4 * 1024 * 1024 }, 4096, sent, RangeSet.of(1, 1019));
  t.deepEqual(got, [...Array.from({ length: 400 }, (_, i) => i + 1), ...Array.from({ length: 20 }, (_, i) => 1000 + i)]);
});

// Found by the CI run after fetches went out as parallel parts: holders of earlier tests' volumes
// under the same ids answered every part with "nothing, done" and the first reply won, so a repair
// found "no survivor" for custody the real holder retained. A lane not served gets no answer now.
test.serial("a holder that does not serve the lane does not answer a fetch: the holder that does is the one heard, every time", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const h = await launchHolder(url, keys, holderConfig("h-twin"));
  const other = await launchHolder(url, keys, { ...holderConfig("h-twin"), lanes: [{ volume: "vol-other", lane: "l0", upstream: ["w1"], downstream: [] }] });
  const wt = await transport(url, "fetcher");
  const w = new Writer(wt, "h-twin");
  try {
    for (let s = 1; s <= 10; s++) w.send(unit(s));
    await eventually(() => h.holder.lane("vol1", "l0")!.retained.toString() === "1-10", "units 1-10 admitted");
    for (let i = 0; i < 20; i++) {
      const units = await fetchUnits(wt, "h-twin", "vol1", "l0", RangeSet.of(1, 10));
      t.is(units.length, 10, `fetch ${i}`);
    }
    t.is(other.holder.counters.get("fetch_unknown_lane"), 20, "the other holder counted each request it left alone");
  } finally {
    w.sender.close();
    await wt.close();
    await other.close();
    await h.close();
  }
});

// A fetch subject names the volume so the server's permissions can scope who reads which volume
// (docs/security.md); a body naming another volume would slip past that scope, so it is refused.
test.serial("a fetch whose body names another volume than its subject gets no answer and is counted, and changes nothing", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const h = await launchHolder(url, keys, holderConfig("h-scoped"));
  const wt = await transport(url, "fetcher");
  const w = new Writer(wt, "h-scoped");
  try {
    for (let s = 1; s <= 5; s++) w.send(unit(s));
    await eventually(() => h.holder.lane("vol1", "l0")!.retained.toString() === "1-5", "units 1-5 admitted");
    const body = encodeMessage(unitFetchSpec, { holder: "h-scoped", volume: "vol1", lane: "l0", ranges: RangeSet.of(1, 5).toJSON(), after: -1, limit: 256 });
    await t.throwsAsync(wt.request(fetchSubject("h-scoped", "vol-allowed"), body, { timeoutMs: 300 }), { code: "timeout" });
    await eventually(() => h.holder.counters.get("fetch_volume_not_in_subject") === 1, "the refusal is counted");
    t.is(h.holder.counters.get("fetch_served_units"), 0);
    t.is(h.holder.lane("vol1", "l0")!.retained.toString(), "1-5");
    t.is((await fetchUnits(wt, "h-scoped", "vol1", "l0", RangeSet.of(1, 5))).length, 5, "the same request on its own volume's subject is served");
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});

test.serial("a fetch reads past a unit that arrived late into a later segment (demo #24: recovery stopped at #91 while 1–208 were retained)", async (t) => {
  // 1-5, then 7-100, then the late 6, then 101-120: 6 lands in the second segment, behind 7-65.
  const sent = [...range(1, 5), ...range(7, 100), 6, ...range(101, 120)];
  const got = await fetchAfterSending(t.context.nats.url, "h-late", { segmentBytes: 1024 * 1024, limitBytes: 16 * 1024 * 1024, maxOutstandingCredit: 8 * 1024 * 1024 }, 16 * 1024, sent, RangeSet.of(1, 120));
  t.deepEqual(got, Array.from({ length: 120 }, (_, i) => i + 1));
});
