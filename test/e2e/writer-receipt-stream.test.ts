import anyTest, { type TestFn } from "ava";
import type { KeyObject } from "node:crypto";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { makeReceipt } from "../../custody/receipt.ts";
import { makeReceiptBatch, receiptStream, signReceiptBatch } from "../../custody/receipt-batch.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { receiptSubject } from "../../transport/protocol/subjects.ts";
import { encodeMessage } from "../../transport/protocol/wire/index.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, KeyRing, launchHolder, launchWriter, settle, site } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Issue #19: a writer that verified receipt batches against the stream the batch itself names
// (instead of the lane subject it arrived on) passed every earlier test. Such a writer lets one
// validly signed batch for another lane or volume raise `protectedThrough` of a lane it says
// nothing about, so a protected sync could resolve with no copy outside the lost AZ.

const VOL = "svol";
const sites = { near: site("s-near", "us-east", "use1-az1"), far: site("s-far", "us-east", "use1-az2") };
const contracts = [{ name: "az-loss", losses: ["az:use1-az1"] }];

let receiptSeq = 0;

/**
 * A batch signed by `holderId` claiming sequences `ranges` of (volume, lane), published on
 * `onSubject`; it binds itself to `boundSubject` (by default its own lane's receipt subject).
 */
function publishBatch(t: NatsTransport, key: KeyObject, holderId: string, volume: string, lane: string, ranges: [number, number][], onSubject: string, boundSubject = receiptSubject(volume, lane)): void {
  const holder = { holderId, incarnation: 1 };
  const r = makeReceipt({
    holder,
    volume,
    lane,
    receiptSeq: ++receiptSeq,
    issuedAt: Date.now(),
    writerTerm: 1,
    topologyEpoch: 1,
    policyGeneration: 1,
    retained: RangeSet.from(ranges),
    prefixBase: 1,
    payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    residency: { kind: "disk", capabilityGeneration: 1, observedAt: Date.now(), file: "/wal/seg-1", offset: 0, length: 4096, syncedAt: Date.now() },
    obligation: { obligationId: `${volume}-${lane}`, releaseAuthority: { kind: "control_log", region: "us-east" } },
    extensions: [],
  });
  const signed = signReceiptBatch(makeReceiptBatch({ ...receiptStream(volume, lane), subject: boundSubject }, holder, Date.now(), [r]), key);
  t.publish(onSubject, encodeMessage(receiptBatchSpec, { body: signed.body, signature: signed.signature }));
}

test.serial("a validly signed receipt batch for another lane or volume never counts towards a lane's protectedThrough", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const farKey = keys.add("h-far", 1); // admitted, outside the writer's AZ, but not running: only this test speaks for it
  const lanes = [
    { lane: "l0", fromLba: 0, toLba: 31, holders: ["h-near"] },
    { lane: "l1", fromLba: 32, toLba: 63, holders: ["h-near"] },
  ];
  const near = await launchHolder(url, keys, e2eHolderConfig("h-near", sites.near, VOL, lanes.map((l) => ({ lane: l.lane, upstream: ["w1"] }))));
  const w = await launchWriter({ url, writerId: "w1", volume: VOL, blockCount: 64, lanes, contracts, sites: { "h-near": sites.near, "h-far": sites.far }, keys, authority: new KeyAuthority("ka-east", "s-near") });
  const peer = await NatsTransport.connect({ servers: url, name: "h-far-impostor" });
  const handle = w.writer;
  const l0 = receiptSubject(VOL, "l0");
  try {
    for (let i = 0; i < 10; i++) await w.write(i, blockData(i)); // l0 sequences 1-10
    await eventually(() => near.holder.lane(VOL, "l0")!.log.retained.covers(1, 10), "h-near holds l0 1-10");
    t.is(handle.protectedThrough("az-loss", "l0"), 0, "the only holder so far shares the writer's AZ");

    // Signed by an admitted holder outside the AZ, with the current term/epoch/generation, but for l1 or another volume.
    publishBatch(peer, farKey, "h-far", VOL, "l1", [[1, 10]], l0);
    publishBatch(peer, farKey, "h-far", "othervol", "l0", [[1, 10]], l0);
    // Issue #46: bound to l1 (or another volume) yet signed for l0's subject; only the lane or volume it names gives it away.
    publishBatch(peer, farKey, "h-far", VOL, "l1", [[1, 10]], l0, l0);
    publishBatch(peer, farKey, "h-far", "othervol", "l0", [[1, 10]], l0, l0);
    await eventually(() => handle.counters.get("receipt_wrong_stream") === 4, "every misbound batch refused as wrong_stream");
    await settle();
    t.is(handle.protectedThrough("az-loss", "l0"), 0, "l0 gained no protection from batches about other streams");

    // The l1 batch on l1's own subject proves l1 only.
    publishBatch(peer, farKey, "h-far", VOL, "l1", [[1, 10]], receiptSubject(VOL, "l1"));
    await eventually(() => handle.protectedThrough("az-loss", "l1") === 10, "l1 protected through 10 by its own batch");
    t.is(handle.protectedThrough("az-loss", "l0"), 0, "a batch for l1 does not count for l0");

    // The same holder's batch bound to l0 on l0's subject is what proves l0.
    publishBatch(peer, farKey, "h-far", VOL, "l0", [[1, 10]], l0);
    await eventually(() => handle.protectedThrough("az-loss", "l0") === 10, "l0 protected through 10 by a batch bound to l0");
    t.is(handle.counters.get("receipt_wrong_stream"), 4);
  } finally {
    await peer.close();
    await w.close();
    await near.close();
  }
});
