import anyTest, { type TestFn } from "ava";
import { startVolumeWriter } from "../../actors/writer/volume-writer.ts";
import { systemClock } from "../../core/clock.ts";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, publishRelease, settle, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Found by sim seed 524172: a terminal holder released units before any receipt of them reached
// its upstream (the receipt was lost, or the units came to it by a refill). Receipts state only
// what is retained now, so the upstream kept those units pinned for it forever — never spilled,
// never released — and a power-loss cut stayed short for good. An edge's release frontier from
// the control log now ends what is owed to it.
test.serial("units a downstream edge was released of stop being owed to it, with no receipt from it ever arriving; a stale one changes nothing", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  // h-b never runs: no receipt of it can ever reach h-a.
  const h = await launchHolder(url, keys, holderConfig("h-a", { downstream: ["h-b"], epoch: 3 }));
  const wt = await transport(url, "writer-and-controller");
  const w = new Writer(wt, "h-a");
  const lane = () => h.holder.lane("vol1", "l0")!;
  const rejected = (code: string) => h.log.filter((o) => o.type === "rejected" && o.code === code).length;
  try {
    for (let s = 1; s <= 10; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "1-10", "units 1-10 admitted");
    t.is(lane().pendingFor("h-b").toString(), "1-10");

    publishRelease(wt, "h-a", [[1, 10]], 3);
    await eventually(() => lane().releasable().isEmpty && h.log.some((o) => o.type === "receipt_published"), "own frontier applied");
    await settle();
    t.is(lane().retained.toString(), "1-10", "our own frontier alone releases nothing still owed to h-b");

    publishRelease(wt, "h-b", [[1, 10]], 2);
    await eventually(() => rejected("stale_epoch") === 1, "an older-epoch frontier of the edge refused");
    await settle();
    t.is(h.holder.counters.get("stale_epoch"), 1, "and counted");
    t.is(lane().pendingFor("h-b").toString(), "1-10", "it changed nothing owed to h-b");
    t.is(lane().retained.toString(), "1-10");

    publishRelease(wt, "h-b", [[1, 10]], 3);
    await eventually(() => lane().retained.isEmpty, "released once h-b was released of them");
    t.true(lane().pendingFor("h-b").isEmpty);
    t.is(lane().released.toString(), "1-10");
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});

test.serial("the writer too: what the control log released at a first hop is owed to it no more, and the writer stops retaining it", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const wt = await transport(url, "writer-w9");
  const ct = await transport(url, "controller");
  const files = new CrashFileLayer();
  await SmartWalVolume.create("/w9", { blockCount: 64, walCapacity: 4096 }, files);
  const volume = await SmartWalVolume.open("/w9", { fileLayer: files });
  const site = { id: "s-z", region: "r", az: "r-a", host: "h", deps: [] };
  // h-z never runs: the writer gets no credit and no receipt from it.
  const writer = startVolumeWriter(
    { writerId: "w9", volume: VOLUME, term: 1, lanes: [{ lane: LANE, fromLba: 0, toLba: 63, holders: ["h-z"] }], contracts: [], holderSites: { "h-z": site }, topologyEpoch: 1, policyGeneration: 0, retainUntil: "receipted" },
    { transport: wt, clock: systemClock, volume, dataKey: new Uint8Array(32).fill(4), peers: keys },
  );
  try {
    // The writer's subscriptions reach the server before the controller's frontier does (the
    // frontier is published once, on another connection).
    await wt.flush();
    for (let s = 1; s <= 3; s++) {
      await writer.write(s, new Uint8Array(BLOCK_SIZE).fill(s));
      await writer.sync();
    }
    t.is(writer.owedTo(LANE, "h-z").toString(), "1-3");
    publishRelease(ct, "h-z", [[1, 3]], 0);
    await eventually(() => writer.counters.get("edge_release_stale_epoch") === 1, "an older-epoch frontier is refused and counted");
    t.is(writer.retainedSeqs(LANE).toString(), "1-3", "it changed nothing");
    publishRelease(ct, "h-z", [[1, 3]], 1);
    await eventually(() => writer.retainedSeqs(LANE).isEmpty, "released at h-z: the writer retains nothing", 5000, () => writer.retainedSeqs(LANE).toString());
    t.true(writer.owedTo(LANE, "h-z").isEmpty);
  } finally {
    writer.stop();
    await volume.close();
    await wt.close();
    await ct.close();
  }
});
