/**
 * The real Holder over a faulty simulated network (SimNetwork + SimulatedClock, deterministic per
 * seed): units, grants, credit requests and receipts are lost, duplicated and reordered. Custody
 * must still converge — every unit receipted by both hops, via cumulative credits and re-forwarding
 * of lost units — and nothing may be admitted beyond credit or released before its frontier.
 */
import test from "ava";
import { unitRecordBytes } from "../../arena/segment.ts";
import { startHolder, type Holder } from "../../actors/holder.ts";
import { releaseFrontierSpec } from "../../actors/holder/holder-messages.ts";
import { seededRandom } from "../../core/random.ts";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { SimNetwork } from "../../sim/sim-network.ts";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { CreditSender } from "../../transport/credit-sender.ts";
import { receiptSubject, releaseSubject } from "../../transport/subjects.ts";
import { decodeMessage, encodeMessage, unitSpec } from "../../transport/wire/index.ts";
import { holderConfig, KeyRing, LANE, unit, VOLUME } from "./holder-fixture.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";

const UNITS = 80;

async function until(cond: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not reached: ${what()}`);
    await new Promise((r) => setImmediate(r));
  }
}

for (const seed of [3, 11]) {
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
      return startHolder(holderConfig(id, cfg), { transport: net.endpoint(id, site), clock, privateKey: keys.privateKey(id), peers: keys, receiptRefreshMs: 100 });
    };
    const hb = await start("hb", "s-b", { upstream: ["ha"] });
    const ha = await start("ha", "s-a", { downstream: ["hb"] });
    const wt = net.endpoint("w1", "s-w");
    const sender = new CreditSender({ transport: wt, clock, sender: "w1", holder: "ha", volume: VOLUME, lane: LANE, retryMs: 20 }).attach();
    try {
      for (let s = 1; s <= UNITS; s++) {
        const u = unit(s, 1, 2048);
        sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
      }
      let lastResend = clock.now();
      // The writer's own copy is what the first hop repairs from in production; here the test
      // re-sends what ha never receipted, as a writer does, until ha holds everything.
      await until(
        () => {
          const got = receipted.get("ha") ?? RangeSet.EMPTY;
          if (!got.covers(1, UNITS) && sender.backlog.units === 0 && clock.now() - lastResend >= 200) {
            lastResend = clock.now();
            for (const r of got.holes(1, UNITS).ranges())
              for (let s = r.first; s <= r.last; s++) {
                const u = unit(s, 1, 2048);
                sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
              }
          }
          return got.covers(1, UNITS) && (receipted.get("hb")?.covers(1, UNITS) ?? false);
        },
        () => JSON.stringify({ ha: receipted.get("ha")?.toString(), hb: receipted.get("hb")?.toString(), counters: ha.counters.snapshot() }),
      );
      const laneA = ha.core.lanes.get("vol1/l0")!;
      t.is(laneA.obligations.retained.toString(), `1-${UNITS}`, "nothing released without a frontier");
      t.true(net.counters.get("drop_loss") > 0 && net.counters.get("duplicate") > 0, "the network really lost and duplicated messages");
      t.is(hb.core.lanes.get("vol1/l0")!.obligations.retained.toString(), `1-${UNITS}`);

      for (const h of ["hb", "ha"]) {
        ctl.publish(releaseSubject(h), encodeMessage(releaseFrontierSpec, { holder: h, volume: VOLUME, lane: LANE, ranges: [[1, UNITS]], epoch: 0, controlSeq: 1 }));
      }
      await until(() => ha.core.empty && hb.core.empty, () => "release did not empty the holders");
      t.log(`retransmits ${ha.counters.get("retransmit")}, replayed ${ha.counters.get("replayed_unit") + hb.counters.get("replayed_unit")}, drops ${net.counters.get("drop_loss")}`);
    } finally {
      sender.close();
      await ha.stop();
      await hb.stop();
      clock.setAutoAdvance(false);
    }
  });
}
