import anyTest, { type TestFn } from "ava";
import type { KeyObject } from "node:crypto";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { makeReceipt } from "../../custody/receipt.ts";
import { makeReceiptBatch, signReceiptBatch } from "../../custody/receipt-batch.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { creditSubject, receiptSubject, unitSubject } from "../../transport/protocol/subjects.ts";
import { creditSpec, encodeMessage, type WireUnit } from "../../transport/protocol/wire/index.ts";
import { readUnitMessage } from "../../transport/unit-frames.ts";
import type { InboundMessage } from "../../transport/transport.ts";
import type { NatsTransport } from "../../transport/nats-transport.ts";
import { eventually, holderConfig, KeyRing, launchHolder, LANE, publishRelease, settle, transport, unit, VOLUME, watchReceipts, Writer } from "./holder-fixture.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

/** Publishes a receipt batch as downstream holder `holderId` would (signed with `key`). */
function sendReceipt(t: NatsTransport, key: KeyObject, holderId: string, incarnation: number, receiptSeq: number, ranges: [number, number][], epoch = 0): void {
  t.publish(receiptSubject(VOLUME, LANE), receiptMessage(key, holderId, incarnation, receiptSeq, ranges, epoch));
}

/** The encoded receipt-batch message downstream holder `holderId` would publish (signed with `key`). */
function receiptMessage(key: KeyObject, holderId: string, incarnation: number, receiptSeq: number, ranges: [number, number][], epoch = 0): Uint8Array {
  const subject = receiptSubject(VOLUME, LANE);
  const holder = { holderId, incarnation };
  const r = makeReceipt({
    holder,
    volume: VOLUME,
    lane: LANE,
    receiptSeq,
    issuedAt: Date.now(),
    writerTerm: 1,
    topologyEpoch: epoch,
    policyGeneration: 0,
    retained: RangeSet.from(ranges),
    prefixBase: 1,
    payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    residency: { kind: "ram", capabilityGeneration: 0, observedAt: Date.now() },
    obligation: { obligationId: "vol1-l0", releaseAuthority: { kind: "control_log", region: "us-east" } },
    extensions: [],
  });
  const signed = signReceiptBatch(makeReceiptBatch({ volume: VOLUME, lane: LANE, subject }, holder, Date.now(), [r]), key);
  return encodeMessage(receiptBatchSpec, { body: signed.body, signature: signed.signature });
}

/** The units a forwarded message carries (one bare unit or a frame of several). */
function unitsOf(m: InboundMessage): WireUnit[] {
  const read = readUnitMessage(m, undefined);
  return read.kind === "units" ? read.units.flatMap((u) => (u.unit ? [u.unit] : [])) : [];
}

test.serial("missing, stale, forged, reordered and duplicated receipts keep the upstream's pins until the edge's own covering receipt arrives", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const hbKey = keys.add("hb", 2); // the edge is admitted at incarnation 2
  keys.add("hx", 1); // a valid holder that is NOT an edge of this lane
  const a = await launchHolder(url, keys, holderConfig("ha", { downstream: ["hb"], epoch: 3 }));
  const wt = await transport(url, "writer-and-fake-hb");
  const forwarded: number[] = [];
  // Units arrive alone or framed several to a message; count units.
  const sub = wt.subscribe(unitSubject("hb", VOLUME, LANE), (m) => forwarded.push(...unitsOf(m).map((u) => u.firstSeq)));
  // Play the edge: grant ha plenty of credit; never acknowledge by anything but receipts.
  wt.publish(creditSubject("hb", VOLUME, LANE), encodeMessage(creditSpec, { holder: "hb", sender: "ha", volume: VOLUME, lane: LANE, incarnation: 2, session: 1, window: 1, grantedThrough: 1 << 24, grantSeq: 1 }));
  const w = new Writer(wt, "ha");
  const lane = () => a.holder.lane("vol1", "l0")!;
  try {
    for (let s = 1; s <= 10; s++) w.send(unit(s));
    await eventually(() => forwarded.length === 10, "10 units forwarded to hb");
    publishRelease(wt, "ha", [[1, 10]], 3);

    // Missing: forwarding completed long ago, the frontier allows release, but no receipt came.
    await settle();
    t.is(lane().retained.toString(), "1-10");
    t.is(lane().pendingFor("hb").toString(), "1-10");

    // Stale incarnation, stale epoch, forged signature, and a non-edge holder: all refused.
    sendReceipt(wt, hbKey, "hb", 1, 9, [[1, 10]], 3);
    sendReceipt(wt, hbKey, "hb", 2, 9, [[1, 10]], 2);
    sendReceipt(wt, generateHolderKeyPair().privateKey, "hb", 2, 9, [[1, 10]], 3);
    sendReceipt(wt, keys.privateKey("hx"), "hx", 1, 1, [[1, 10]], 3);
    await eventually(() => a.log.filter((o) => o.type === "receipt_refused").length >= 3, "three refusals");
    await settle();
    const refused = a.log.filter((o) => o.type === "receipt_refused").map((o) => (o as { code: string }).code);
    t.deepEqual(refused.sort(), ["bad_signature", "stale_epoch", "stale_incarnation"]);
    t.is(lane().retained.toString(), "1-10", "nothing released on a stale or foreign receipt");
    t.is(lane().pendingFor("hb").toString(), "1-10");

    // Reordered and duplicated: seq 3 (1-6) before seq 2 (1-3), then seq 3 again.
    sendReceipt(wt, hbKey, "hb", 2, 3, [[1, 6]], 3);
    sendReceipt(wt, hbKey, "hb", 2, 2, [[1, 3]], 3);
    sendReceipt(wt, hbKey, "hb", 2, 3, [[1, 6]], 3);
    await eventually(() => lane().pendingFor("hb").toString() === "7-10", "pins for 1-6 dropped");
    await settle();
    t.is(lane().retained.toString(), "1-10", "a segment is released whole, only when all of it is covered");

    // The right receipt: everything released.
    sendReceipt(wt, hbKey, "hb", 2, 4, [[1, 10]], 3);
    await eventually(() => lane().retained.isEmpty, "released after the covering receipt");
    const order = a.log.filter((o) => o.type === "edge_receipt" || o.type === "released").map((o) => o.type);
    t.is(order[order.length - 1], "released");
    t.is(a.holder.counters.get("receipt_bad_signature"), 1);
  } finally {
    sub.unsubscribe();
    w.sender.close();
    await wt.close();
    await a.close();
  }
});

test.serial("a unit lost on the way to an edge is re-forwarded from RAM once the edge's receipts show the hole, and released only after the edge receipts it", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const hbKey = keys.add("hb2", 1);
  const a = await launchHolder(url, keys, holderConfig("ha2", { downstream: ["hb2"] }), { receiptRefreshMs: 50 });
  const wt = await transport(url, "writer-and-fake-hb2");
  let deliveries5 = 0;
  let got = RangeSet.EMPTY;
  let seq = 0;
  // The fake edge "loses" the first delivery of unit 5 and receipts whatever it really holds.
  const sub = wt.subscribe(unitSubject("hb2", VOLUME, LANE), (m) => {
    for (const u of unitsOf(m)) {
      if (u.firstSeq === 5 && deliveries5++ === 0) continue;
      got = got.add(u.firstSeq, u.lastSeq);
    }
    sendReceipt(wt, hbKey, "hb2", 1, ++seq, got.toJSON(), 0);
  });
  wt.publish(creditSubject("hb2", VOLUME, LANE), encodeMessage(creditSpec, { holder: "hb2", sender: "ha2", volume: VOLUME, lane: LANE, incarnation: 1, session: 1, window: 1, grantedThrough: 1 << 24, grantSeq: 1 }));
  const w = new Writer(wt, "ha2");
  const lane = () => a.holder.lane("vol1", "l0")!;
  try {
    for (let s = 1; s <= 10; s++) w.send(unit(s));
    publishRelease(wt, "ha2", [[1, 10]]);
    await eventually(() => deliveries5 >= 2, "unit 5 re-forwarded");
    t.true(a.holder.counters.get("retransmit") >= 1);
    await eventually(() => lane().retained.isEmpty, "released once the edge holds everything");
    t.is(got.toString(), "1-10");
  } finally {
    sub.unsubscribe();
    w.sender.close();
    await wt.close();
    await a.close();
  }
});

test.serial("a holder passes over the batches of holders it does not act on without decoding them, yet every holder on the subject refuses and counts unreadable bytes, and a holder refuses its edge's forged batch; both keep admitting and receipting", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  keys.add("hl-down", 1);
  keys.add("hl-other", 1);
  const mid = await launchHolder(url, keys, holderConfig("hl-mid", { downstream: ["hl-down"] }));
  const last = await launchHolder(url, keys, holderConfig("hl-last"));
  const wt = await transport(url, "peer");
  const refusals = (h: typeof mid) => Object.entries(h.holder.counters.snapshot()).filter(([k, v]) => k.startsWith("receipt_") && v > 0).map(([k]) => k);
  const w = new Writer(wt, "hl-last");
  try {
    // Bytes that are no receipt batch at all: every holder on the subject refuses and counts them.
    wt.publish(receiptSubject(VOLUME, LANE), new Uint8Array([0xc1, 0xc1, 0xc1, 0xc1]));
    await eventually(() => refusals(mid).includes("receipt_malformed") && refusals(last).includes("receipt_malformed"), "both refused the unreadable bytes");
    // A batch of a holder neither acts on, corrupt after its head: passed over by both, undecoded
    // (the writer and the controller, which act on every holder's receipts, are the ones to refuse it).
    const corrupt = receiptMessage(generateHolderKeyPair().privateKey, "hl-other", 1, 1, [[1, 4]]);
    corrupt[Buffer.from(corrupt).indexOf(Buffer.from("signature")) - 2] = 0xc1; // the body's last byte
    wt.publish(receiptSubject(VOLUME, LANE), corrupt);
    // The edge's batch signed by a key nobody admitted: the holder with that edge refuses it.
    sendReceipt(wt, generateHolderKeyPair().privateKey, "hl-down", 1, 1, [[1, 4]]);
    await eventually(() => refusals(mid).length > 1, "the holder with the edge refused its forged batch");
    await settle();
    t.deepEqual(refusals(last), ["receipt_malformed"], "the last hop counted the unreadable bytes and nothing else");
    t.is(mid.holder.counters.snapshot()["receipt_malformed"], 1, "the corrupt batch of a holder that is no edge was not decoded");
    const watch = watchReceipts(wt);
    for (let s = 1; s <= 4; s++) w.send(unit(s));
    await eventually(() => watch.byHolder("hl-last").toString() === "1-4", "the last hop still admits and receipts");
    watch.stop();
  } finally {
    w.sender.close();
    await wt.close();
    await mid.close();
    await last.close();
  }
});
