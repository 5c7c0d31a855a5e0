import anyTest, { type TestFn } from "ava";
import type { KeyObject } from "node:crypto";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { makeReceipt } from "../../custody/receipt.ts";
import { makeReceiptBatch, receiptStream, signReceiptBatch } from "../../custody/receipt-batch.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { receiptSubject } from "../../transport/protocol/subjects.ts";
import { encodeMessage } from "../../transport/protocol/wire/index.ts";
import type { NatsTransport } from "../../transport/nats-transport.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, settle, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Rule (issue #46, item 7): a validly signed receipt batch bound to lane l1 that arrives on l0's
// receipt subject is refused as `wrong_stream` and adds nothing to l0. The writer's intake has its
// own test (test/e2e/writer-receipt-stream.test.ts); a holder verifies its downstream edges'
// batches on the same path, and a batch it wrongly believed would unpin units it still owes.

let receiptSeq = 0;

/**
 * A batch signed by `holderId` claiming `ranges` of (volume, lane), published on `onSubject`. The
 * batch binds itself to `boundSubject` (by default its lane's own receipt subject).
 */
function publishBatch(t: NatsTransport, key: KeyObject, holderId: string, lane: string, ranges: [number, number][], onSubject: string, boundSubject = receiptSubject(VOLUME, lane), volume = VOLUME): void {
  const holder = { holderId, incarnation: 1 };
  const now = Date.now();
  const r = makeReceipt({
    holder,
    volume,
    lane,
    receiptSeq: ++receiptSeq,
    issuedAt: now,
    writerTerm: 1,
    topologyEpoch: 0,
    policyGeneration: 0,
    retained: RangeSet.from(ranges),
    prefixBase: 1,
    payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    residency: { kind: "disk", capabilityGeneration: 1, observedAt: now, file: "/wal/seg-1", offset: 0, length: 4096, syncedAt: now },
    obligation: { obligationId: `${volume}-${lane}`, releaseAuthority: { kind: "control_log", region: "us-east" } },
    extensions: [],
  });
  const signed = signReceiptBatch(makeReceiptBatch({ ...receiptStream(volume, lane), subject: boundSubject }, holder, now, [r]), key);
  t.publish(onSubject, encodeMessage(receiptBatchSpec, { body: signed.body, signature: signed.signature }));
}

test.serial("wrong_stream: a downstream edge's signed batch bound to l1 arriving on l0's subject is refused, counted, and unpins nothing of l0", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const edgeKey = keys.add("h-b", 1); // admitted, never running: only this test speaks for it
  const h = await launchHolder(url, keys, holderConfig("h-a", { lanes: [{ volume: VOLUME, lane: LANE, upstream: ["w1"], downstream: ["h-b"] }, { volume: VOLUME, lane: "l1", upstream: ["w1"], downstream: ["h-b"] }] }));
  const wt = await transport(url, "writer-and-impostor");
  const w = new Writer(wt, "h-a");
  const lane = () => h.holder.lane(VOLUME, LANE)!;
  const l0 = receiptSubject(VOLUME, LANE);
  try {
    for (let s = 1; s <= 10; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "1-10", "units 1-10 admitted");
    t.is(lane().pendingFor("h-b").toString(), "1-10", "owed to h-b until it receipts them");

    publishBatch(wt, edgeKey, "h-b", "l1", [[1, 10]], l0);
    // Bound to l1 yet signed for l0's subject: only the lane it names gives it away.
    publishBatch(wt, edgeKey, "h-b", "l1", [[1, 10]], l0, l0);
    // The same for another volume's l0.
    publishBatch(wt, edgeKey, "h-b", LANE, [[1, 10]], l0, l0, "othervol");
    await eventually(() => h.holder.counters.get("receipt_wrong_stream") === 3, "every misbound batch refused as wrong_stream");
    await settle();
    t.is(lane().pendingFor("h-b").toString(), "1-10", "l0 still owes h-b everything: a batch about l1 proves nothing of l0");
    t.is(lane().retained.toString(), "1-10");
    t.true(h.log.some((o) => o.type === "receipt_refused" && o.code === "wrong_stream"));

    // The same holder's batch bound to l0, on l0's subject, is what proves l0.
    publishBatch(wt, edgeKey, "h-b", LANE, [[1, 10]], l0);
    await eventually(() => lane().pendingFor("h-b").isEmpty, "a batch bound to l0 ends what l0 owes h-b");
    t.is(h.holder.counters.get("receipt_wrong_stream"), 3);
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});
