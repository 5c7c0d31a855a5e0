import anyTest, { type TestFn } from "ava";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { CountingFileLayer, eventually, holderConfig, KeyRing, launchHolder, publishRelease, settle, tempDir, transport, unit, watchReceipts, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

test.serial("a flush that misses its deadline does not advance the persistence cut; a completed in-deadline fdatasync does", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const files = new CountingFileLayer();
  files.syncDelayMs = 300; // the disk is slower than the flush deadline
  const h = await launchHolder(url, keys, holderConfig("h-disk", { residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 40 } }), {
    files,
    spillPath: `${tempDir()}/spill.log`,
  });
  const wt = await transport(url, "writer");
  const receipts = watchReceipts(wt);
  const w = new Writer(wt, "h-disk");
  const lane = () => h.holder.lane("vol1", "l0")!;
  try {
    for (let s = 1; s <= 20; s++) w.send(unit(s, 1, 4096));
    await eventually(() => h.holder.counters.get("flush_deadline_missed") >= 1, "a missed flush deadline");
    t.true(files.writes > 0, "the spill records were written...");
    t.true(lane().diskResident.isEmpty, "...but a write or a late sync is not persistence");
    t.false(receipts.residencies("h-disk").includes("disk"), "no disk receipt was issued");
    t.is(h.holder.counters.get("flush_synced"), 0);

    files.syncDelayMs = 0;
    await eventually(() => lane().diskResident.covers(1, 20), "persistence cut covers 1-20 after an in-deadline sync", 5_000);
    await eventually(() => receipts.residencies("h-disk").includes("disk"), "disk receipt published");
    t.true(files.datasyncs >= 1);
    t.true(h.holder.counters.get("flush_synced") >= 1);
    // Custody continues at disk residency: the RAM copies were recycled.
    t.is(lane().arenaReport().ramBytes, 0);
    t.is(lane().retained.toString(), "1-20");
  } finally {
    receipts.stop();
    w.sender.close();
    await wt.close();
    await settle(50);
    await h.close();
  }
});

test.serial("segments released while a flush is writing earlier ones are skipped, not a failed flush; later units still persist (soak regression)", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const files = new CountingFileLayer();
  let openGate!: () => void;
  files.writeGate = new Promise<void>((r) => (openGate = r));
  const h = await launchHolder(url, keys, holderConfig("h-race", { residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 5_000 } }), {
    files,
    spillPath: `${tempDir()}/spill.log`,
  });
  const wt = await transport(url, "writer-race");
  const w = new Writer(wt, "h-race");
  const lane = () => h.holder.lane("vol1", "l0")!;
  try {
    for (let s = 1; s <= 60; s++) w.send(unit(s, 1, 4096));
    await eventually(() => files.writesStarted >= 1 && lane().retained.covers(1, 60), "a flush is writing its first segment while 1-60 are retained");
    // The store's copy is no longer needed (a base covers it): the release lands mid-flush.
    publishRelease(wt, "h-race", [[1, 60]]);
    await eventually(() => lane().released.covers(1, 60), "1-60 released");
    openGate();
    files.writeGate = undefined;
    for (let s = 61; s <= 75; s++) w.send(unit(s, 1, 4096));
    await eventually(() => lane().diskResident.covers(61, 75), "61-75 persisted after the interrupted flush", 5_000);
    t.is(h.holder.counters.get("flush_failed"), 0, "no flush failed");
  } finally {
    openGate();
    w.sender.close();
    await wt.close();
    await settle(50);
    await h.close();
  }
});
