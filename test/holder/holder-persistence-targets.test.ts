/**
 * A disk-capable holder whose peer directory names other persistence targets for its lane keeps
 * the lane in RAM (no spill write at all), counts each passed-over segment once, and flushes as
 * soon as the targets include it again; a segment that stops being its to persist while a flush is
 * writing earlier ones is cancelled unwritten; under memory pressure it spills anyway, so a left-out
 * holder never stops its writer. Real nats-server, real files with fdatasync.
 */
import anyTest, { type TestFn } from "ava";
import { RangeSet } from "../../lanes/range-set.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import type { Holder, HolderLaneView } from "../../actors/holder/holder.ts";
import type { HolderConfigInput } from "../../actors/holder/holder-config.ts";
import { CountingFileLayer, eventually, holderConfig, KeyRing, launchHolder, settle, tempDir, transport, unit, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

/** A peer directory whose persistence choice the test sets: `persists` true = this holder is a target (or no choice). */
class ChoosingPeers extends KeyRing {
  persists = true;
  asked = 0;
  flushable(_holderId: string, _volume: string, _lane: string, seqs: RangeSet): RangeSet {
    this.asked++;
    return this.persists ? seqs : RangeSet.EMPTY;
  }
}

const DISK = { residency: ["ram" as const, "disk" as const], flush: { intervalMs: 20, deadlineMs: 5_000 }, arena: { segmentBytes: 16 * 1024, limitBytes: 2 * 1024 * 1024, maxOutstandingCredit: 256 * 1024, maxUnitBytes: 8 * 1024, maxOpenDelayMs: 20 } };

/** A disk holder `id` reading its persistence choice from `peers`, its spill files counted, and a writer feeding it; stopped after `body`. */
async function withDiskHolder(
  url: string,
  id: string,
  peers: ChoosingPeers,
  files: CountingFileLayer,
  over: Partial<HolderConfigInput>,
  body: (rig: { holder: Holder; lane: () => HolderLaneView; send(from: number, to: number): void }) => Promise<void>,
): Promise<void> {
  const h = await launchHolder(url, peers, holderConfig(id, { ...DISK, ...over }), { files, spillPath: `${tempDir()}/spill.log`, peers });
  const wt = await transport(url, `writer-${id}`);
  const w = new Writer(wt, id);
  try {
    await body({ holder: h.holder, lane: () => h.holder.lane("vol1", "l0")!, send: (from, to) => { for (let s = from; s <= to; s++) w.send(unit(s, 1, 4096)); } });
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await h.close();
  }
}

test.serial("a holder the targets leave out writes nothing to disk and counts each segment it passes over once; named again, it persists everything it holds", async (t) => {
  const peers = new ChoosingPeers();
  peers.persists = false;
  const files = new CountingFileLayer();
  await withDiskHolder(t.context.nats.url, "h-ram-only", peers, files, {}, async ({ holder, lane, send }) => {
    send(1, 24);
    await eventually(() => lane().retained.covers(1, 24) && holder.counters.get("flush_skipped_not_target") >= 2, "1-24 retained, sealed segments passed over");
    // Every unit is sealed in some segment after the open delay: the count settles at one per segment.
    await settle(100);
    const skipped = holder.counters.get("flush_skipped_not_target");
    const asked = peers.asked;
    await eventually(() => peers.asked > asked + 20, "many more flush ticks");
    t.is(holder.counters.get("flush_skipped_not_target"), skipped, "a segment passed over again is not counted again");
    t.true(skipped <= 24, `at most one count per segment (${skipped} for 24 units)`);
    t.is(files.writes, 0, "no spill write");
    t.is(files.datasyncs, 0);
    t.true(lane().diskResident.isEmpty);
    t.is(holder.counters.get("flush_synced"), 0);

    peers.persists = true;
    await eventually(() => lane().diskResident.covers(1, 20), "persisted once named a target", 5_000, () => lane().diskResident.toString());
    t.true(files.datasyncs >= 1);
    t.is(holder.counters.get("flush_cancelled"), 0);
  });
});

test.serial("segments that stop being the holder's to persist while a flush writes earlier ones are cancelled unwritten; the flush still completes", async (t) => {
  const peers = new ChoosingPeers();
  const files = new CountingFileLayer();
  let openGate!: () => void;
  files.writeGate = new Promise<void>((r) => (openGate = r));
  try {
    await withDiskHolder(t.context.nats.url, "h-cancel", peers, files, {}, async ({ holder, lane, send }) => {
      send(1, 24);
      await eventually(() => files.writesStarted >= 1 && lane().retained.covers(1, 24), "a flush is writing its first segment while 1-24 are retained");
      // The controller names another target meanwhile: what this flush has not started is not written.
      peers.persists = false;
      openGate();
      files.writeGate = undefined;
      await eventually(() => holder.counters.get("flush_cancelled") >= 1, "the unstarted segments are cancelled", 5_000);
      await eventually(() => holder.counters.get("flush_synced") >= 1, "the flush completes with what it had started");
      t.is(holder.counters.get("flush_failed"), 0);
      const persisted = lane().diskResident;
      t.false(persisted.covers(1, 24), `only the started segment persisted (${persisted.toString()})`);
      t.true(lane().retained.covers(1, 24), "the cancelled segments stay in custody, in RAM");
      const writes = files.writes;
      await settle(200);
      t.is(files.writes, writes, "no later flush writes them");
    });
  } finally {
    openGate();
  }
});

test.serial("a left-out holder whose RAM fills past the pressure ratio spills anyway: custody moves to disk and its writer is never stopped", async (t) => {
  const peers = new ChoosingPeers();
  peers.persists = false;
  const files = new CountingFileLayer();
  // 256 KiB of RAM: 200 units of 4 KiB (about 850 KiB on the wire) cannot all stay in RAM.
  const small = { arena: { ...DISK.arena, limitBytes: 256 * 1024, maxOutstandingCredit: 64 * 1024 }, pressureRatio: 0.5 };
  await withDiskHolder(t.context.nats.url, "h-pressed", peers, files, small, async ({ holder, lane, send }) => {
    send(1, 200);
    await eventually(() => lane().retained.covers(1, 200), "all 200 units admitted: credit kept flowing", 20_000, () => lane().retained.toString());
    t.false(lane().diskResident.isEmpty, `pressure moved custody to disk (${lane().diskResident.toString()})`);
    t.true(files.datasyncs >= 1);
    t.true(holder.counters.get("flush_skipped_not_target") >= 1, "before the pressure, segments were passed over");
  });
});
