import anyTest, { type TestFn } from "ava";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { eventually, holderConfig, KeyRing, launchHolder, transport, unit, watchReceipts, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

test.serial("malformed, oversized and digest-failing units are rejected with typed codes, counted, and never receipted while good units keep flowing", async (t) => {
  const keys = new KeyRing();
  const h = await launchHolder(t.context.nats.url, keys, holderConfig("h-ingress"));
  const wt = await transport(t.context.nats.url, "writer");
  const receipts = watchReceipts(wt);
  const w = new Writer(wt, "h-ingress");
  try {
    w.send(unit(1));
    w.sendRaw(new Uint8Array([0xc1, 0x00, 0x13]), 64); // not msgpack
    w.send(unit(2, 1, 40 * 1024)); // larger than maxUnitBytes (32 KiB)
    const bad = unit(3);
    bad.payload[0]! ^= 0xff; // digest no longer matches
    w.sendRaw(encodeMessage(unitSpec, bad), 1024 + 40);
    w.send(unit(3));
    w.send(unit(4));
    await eventually(() => receipts.byHolder("h-ingress").covers(3, 4), "receipt covering 3-4");
    const c = h.holder.counters;
    t.is(c.get("malformed"), 1);
    t.is(c.get("unit_too_large"), 1);
    t.is(c.get("digest_mismatch"), 1);
    t.is(h.holder.lane("vol1", "l0")!.retained.toString(), "1,3-4");
    t.false(receipts.byHolder("h-ingress").has(2), "the oversized unit is never claimed");
    t.is(h.holder.state(), "serving");
    t.deepEqual(
      h.log.filter((o) => o.type === "rejected").map((o) => (o as { code: string }).code),
      ["malformed", "unit_too_large", "digest_mismatch"],
    );
  } finally {
    receipts.stop();
    w.sender.close();
    await wt.close();
    await h.close();
  }
});

test.serial("a unit from an unknown sender is refused and counted", async (t) => {
  const keys = new KeyRing();
  const h = await launchHolder(t.context.nats.url, keys, holderConfig("h-unknown"));
  const wt = await transport(t.context.nats.url, "stranger");
  const w = new Writer(wt, "h-unknown", "stranger");
  try {
    wt.publish("custody.v1.unit.h-unknown.vol1.l0", encodeMessage(unitSpec, unit(1)), { headers: { "Custody-Sender": "stranger", "Custody-Sent-Through": "1064" } });
    await eventually(() => h.holder.counters.get("unknown_sender") >= 1, "unknown_sender counted");
    t.true(h.holder.lane("vol1", "l0")!.retained.isEmpty);
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});

test.serial("a frame with a digest-failing unit and a duplicate: only those are refused; the frame's other units are admitted and no credit leaks", async (t) => {
  const keys = new KeyRing();
  const h = await launchHolder(t.context.nats.url, keys, holderConfig("h-frames", { arena: { segmentBytes: 64 * 1024, limitBytes: 512 * 1024, maxOutstandingCredit: 128 * 1024, maxUnitBytes: 32 * 1024 } }));
  const wt = await transport(t.context.nats.url, "writer-frames");
  const receipts = watchReceipts(wt);
  const w = new Writer(wt, "h-frames");
  try {
    await eventually(() => w.sender.state.grantedThrough > 0, "initial credit");
    // One turn: these leave as one frame.
    const bad = unit(3);
    bad.payload[7]! ^= 0x01;
    w.send(unit(1));
    w.send(unit(2));
    w.sendRaw(encodeMessage(unitSpec, bad), 1024 + 40);
    w.send(unit(4));
    await eventually(() => receipts.byHolder("h-frames").covers(4), "units after the bad one receipted");
    t.is(w.sender.messagesSent, 1, "the four units went as one frame");
    w.send(unit(2)); // a duplicate of an admitted unit, in a frame of its own kind
    w.send(unit(3));
    await eventually(() => receipts.byHolder("h-frames").covers(3), "the good unit 3 receipted");
    const lane = h.holder.lane("vol1", "l0")!;
    t.is(lane.retained.toString(), "1-4");
    t.is(h.holder.counters.get("digest_mismatch"), 1);
    t.is(h.holder.counters.get("duplicate_unit"), 1);
    // More than a window of further units all get through: the refused units' credit came back.
    for (let s = 5; s <= 250; s++) w.send(unit(s));
    await eventually(() => lane.retained.covers(5, 250), "more than a credit window admitted", 10_000);
    t.is(h.holder.counters.get("credit_exceeded"), 0);
    t.true(w.sender.unitsSent > w.sender.messagesSent, "units were framed");
    // Every byte the sender sent is accounted, and the arena holds exactly the grantor's unused credit.
    const win = lane.creditWindow("w1")!;
    t.is(win.consumedThrough, w.sender.state.sentThrough);
    t.is(lane.arenaCreditBytes(), win.grantedThrough - win.consumedThrough);
  } finally {
    receipts.stop();
    w.sender.close();
    await wt.close();
    await h.close();
  }
});
