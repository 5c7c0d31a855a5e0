/**
 * The real Holder and the real volume writer over a faulty simulated network (SimNetwork +
 * SimulatedClock, deterministic per seed): units, grants, credit requests and receipts are lost,
 * duplicated and reordered. Custody must still converge by itself — every write receipted by both
 * hops, via cumulative credits and the senders' own gap repair (the writer toward the first hop,
 * the first hop toward its edge) — and nothing may be admitted beyond credit or released before
 * its frontier. The test only writes and watches: it re-sends nothing.
 */
import test from "ava";
import { startHolder, type Holder } from "../../actors/holder/holder.ts";
import { releaseFrontierSpec } from "../../transport/protocol/wire/holder-messages.ts";
import { seededRandom } from "../../core/random.ts";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { SimNetwork } from "../../sim/sim-network.ts";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { startVolumeWriter } from "../../actors/writer/volume-writer.ts";
import { CrashFileLayer } from "../../core/crash-file-layer.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { receiptSubject, releaseSubject } from "../../transport/protocol/subjects.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/wire/index.ts";
import { holderConfig, KeyRing, LANE, VOLUME } from "./holder-fixture.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";

const UNITS = 80;

async function until(cond: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not reached: ${what()}`);
    await new Promise((r) => setImmediate(r));
  }
}

// Seeds whose loss pattern drops units, so resends are exercised: the writer's (3, 14) and the
// holder's (16). Which messages a seed drops depends on how many the parties send: since a frame's
// units are credited before one top-up, seed 11 drops only grants and receipts.
for (const seed of [3, 14, 16]) {
  test(`seed ${seed}: over 10% loss, 10% duplication and reordering every unit is receipted by both hops, and release waits for its frontier`, async (t) => {
    const clock = new SimulatedClock({ autoAdvance: true, startMs: 1_700_000_000_000 });
    const net = new SimNetwork({
      clock,
      random: seededRandom(seed).fork("net"),
      defaultEdge: { latencyMs: 1, jitterMs: 2, loss: 0.1, duplicate: 0.1, reorder: 0.05, reorderWindowMs: 5 },
    });
    const keys = new KeyRing();
    const receipted = new Map<string, RangeSet>();
    const ctl = net.endpoint("ctl", "s-ctrl");
    net.setEdge("s-ctrl", "s-a", { loss: 0, duplicate: 0, reorder: 0 });
    net.setEdge("s-ctrl", "s-b", { loss: 0, duplicate: 0, reorder: 0 });
    ctl.subscribe(receiptSubject(VOLUME, LANE), (m) => {
      const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m.data).body);
      let got = receipted.get(b.holder.holderId) ?? RangeSet.EMPTY;
      for (const r of b.receipts) got = got.union(r.retained);
      receipted.set(b.holder.holderId, got);
    });
    const start = (id: string, site: string, cfg: Parameters<typeof holderConfig>[1]): Promise<Holder> => {
      keys.add(id);
      return startHolder({ ...holderConfig(id, cfg), resendAfterMs: 200 }, { transport: net.endpoint(id, site), clock, privateKey: keys.privateKey(id), peers: keys, receiptRefreshMs: 100 });
    };
    const hb = await start("hb", "s-b", { upstream: ["ha"] });
    const ha = await start("ha", "s-a", { downstream: ["hb"] });
    const files = new CrashFileLayer();
    await SmartWalVolume.create("/w1", { blockCount: 64, walCapacity: 4096 }, files);
    const volume = await SmartWalVolume.open("/w1", { fileLayer: files, clock });
    const site = { region: "r", az: "r-a", host: "h", deps: [] };
    const writer = startVolumeWriter(
      { writerId: "w1", volume: VOLUME, term: 1, lanes: [{ lane: LANE, fromLba: 0, toLba: 63, holders: ["ha"] }], contracts: [], holderSites: { ha: { id: "s-a", ...site } }, topologyEpoch: 0, policyGeneration: 0, resendAfterMs: 200 },
      { transport: net.endpoint("w1", "s-w"), clock, volume, dataKey: new Uint8Array(32).fill(3), peers: keys },
    );
    try {
      // One write then a local sync each, so every write becomes its own unit (sequence s).
      for (let s = 1; s <= UNITS; s++) {
        await writer.write(s % 64, new Uint8Array(BLOCK_SIZE).fill(s));
        await writer.sync();
      }
      await until(
        () => (receipted.get("ha")?.covers(1, UNITS) ?? false) && (receipted.get("hb")?.covers(1, UNITS) ?? false),
        () => JSON.stringify({ ha: receipted.get("ha")?.toString(), hb: receipted.get("hb")?.toString(), writer: writer.counters.snapshot(), holder: ha.counters.snapshot() }),
      );
      const laneA = ha.lane("vol1", "l0")!;
      t.is(laneA.retained.toString(), `1-${UNITS}`, "nothing released without a frontier");
      t.true(net.counters.get("drop_loss") > 0 && net.counters.get("duplicate") > 0, "the network really lost and duplicated messages");
      t.is(hb.lane("vol1", "l0")!.retained.toString(), `1-${UNITS}`);

      for (const h of ["hb", "ha"]) {
        ctl.publish(releaseSubject(h), encodeMessage(releaseFrontierSpec, { holder: h, volume: VOLUME, lane: LANE, ranges: [[1, UNITS]], epoch: 0, controlSeq: 1 }));
      }
      await until(() => ha.empty() && hb.empty(), () => "release did not empty the holders");
      t.true(writer.counters.get("retransmit") + ha.counters.get("retransmit") > 0, "the senders repaired gaps themselves");
      t.log(`writer retransmits ${writer.counters.get("retransmit")}, holder retransmits ${ha.counters.get("retransmit")}, replayed ${ha.counters.get("replayed_unit") + hb.counters.get("replayed_unit")}, drops ${net.counters.get("drop_loss")}`);
    } finally {
      writer.stop();
      await ha.stop();
      await hb.stop();
      clock.setAutoAdvance(false);
    }
  });
}
