import test from "ava";
import fc from "fast-check";
import {
  CreditError,
  initialReceiverWindow,
  initialSenderWindow,
  receiverCurrentGrant,
  receiverNextGrant,
  receiverOnArrival,
  receiverOnReport,
  receiverOutstanding,
  senderApplyGrant,
  senderAvailable,
  senderCanSend,
  senderRecordSend,
  type CreditGrant,
  type ReceiverWindow,
  type SenderWindow,
} from "../../actors/hop/index.ts";

test("a sender with no grant cannot send, and a refused send leaves the window unchanged", (t) => {
  const w = initialSenderWindow;
  t.false(senderCanSend(w, 1));
  const err = t.throws(() => senderRecordSend(w, 1), { instanceOf: CreditError });
  t.is(err?.code, "credit_exceeded");
  t.deepEqual(w, initialSenderWindow);
});

test("an older or duplicated grant never lowers the sender's cumulative grant", (t) => {
  let w = senderApplyGrant(initialSenderWindow, { grantedThrough: 100, grantSeq: 2 });
  w = senderApplyGrant(w, { grantedThrough: 40, grantSeq: 1 });
  w = senderApplyGrant(w, { grantedThrough: 100, grantSeq: 2 });
  t.is(w.grantedThrough, 100);
  t.is(senderAvailable(w), 100);
});

test("a malformed grant figure is rejected with invalid_credit", (t) => {
  const err = t.throws(() => senderApplyGrant(initialSenderWindow, { grantedThrough: -1, grantSeq: 0 }), {
    instanceOf: CreditError,
  });
  t.is(err?.code, "invalid_credit");
});

test("a receiver refuses an arrival beyond its grant and keeps its count", (t) => {
  const { window } = receiverNextGrant(initialReceiverWindow, 10, 100);
  const err = t.throws(() => receiverOnArrival(window, 11), { instanceOf: CreditError });
  t.is(err?.code, "credit_exceeded");
  t.is(window.consumedThrough, 0);
});

test("a unit lost on the wire consumes its credit when the next arrival reports the sender's total", (t) => {
  const { window } = receiverNextGrant(initialReceiverWindow, 100, 100);
  const r = receiverOnArrival(window, 10, 30); // 20 bytes were lost before this 10-byte unit
  t.is(r.window.consumedThrough, 30);
  t.is(r.consumed, 30);
  t.is(receiverOutstanding(r.window), 70);
});

test("grants withhold when the arena has nothing grantable", (t) => {
  const r = receiverNextGrant(initialReceiverWindow, 0, 100);
  t.is(r.extra, 0);
  t.is(r.window, initialReceiverWindow);
});

test("receiver reports never lower the consumed count and never pass the grant", (t) => {
  const { window } = receiverNextGrant(initialReceiverWindow, 50, 100);
  const a = receiverOnReport(window, 80).window;
  t.is(a.consumedThrough, 50);
  t.is(receiverOnReport(a, 10).window.consumedThrough, 50);
});

type Step =
  | { op: "grant"; grantable: number }
  | { op: "deliverGrant"; pick: number; duplicate: boolean }
  | { op: "dropGrant"; pick: number }
  | { op: "send"; bytes: number }
  | { op: "deliverUnit"; lose: boolean; duplicate: boolean };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant("grant" as const), grantable: fc.nat(5000) }),
  fc.record({ op: fc.constant("deliverGrant" as const), pick: fc.nat(), duplicate: fc.boolean() }),
  fc.record({ op: fc.constant("dropGrant" as const), pick: fc.nat() }),
  fc.record({ op: fc.constant("send" as const), bytes: fc.integer({ min: 1, max: 3000 }) }),
  fc.record({ op: fc.constant("deliverUnit" as const), lose: fc.boolean(), duplicate: fc.boolean() }),
);

test("a duplicated or late unit whose bytes the sender's total already accounted consumes no credit", (t) => {
  const { window } = receiverNextGrant(initialReceiverWindow, 100, 100);
  const first = receiverOnArrival(window, 10, 30);
  const dup = receiverOnArrival(first.window, 10, 30);
  t.true(dup.replayed);
  t.is(dup.consumed, 0);
  t.is(dup.window, first.window);
  const late = receiverOnArrival(first.window, 20, 20); // the unit presumed lost shows up after all
  t.true(late.replayed);
});

test("property: over lossy, duplicating, reordering grant delivery the sender never exceeds the issued grant and the receiver never refuses an honest unit, even when units are duplicated", (t) => {
  fc.assert(
    fc.property(fc.array(stepArb, { maxLength: 300 }), fc.integer({ min: 1, max: 8000 }), (steps, maxOutstanding) => {
      let sender: SenderWindow = initialSenderWindow;
      let receiver: ReceiverWindow = initialReceiverWindow;
      const grantsInFlight: CreditGrant[] = [];
      // Units travel in order (NATS keeps per-publisher order) but may be lost.
      const unitsInFlight: { bytes: number; sentThrough: number }[] = [];
      for (const s of steps) {
        switch (s.op) {
          case "grant": {
            const r = receiverNextGrant(receiver, s.grantable, maxOutstanding);
            receiver = r.window;
            grantsInFlight.push(receiverCurrentGrant(receiver));
            break;
          }
          case "deliverGrant": {
            if (grantsInFlight.length === 0) break;
            const i = s.pick % grantsInFlight.length;
            const g = grantsInFlight[i]!;
            if (!s.duplicate) grantsInFlight.splice(i, 1);
            sender = senderApplyGrant(sender, g);
            break;
          }
          case "dropGrant": {
            if (grantsInFlight.length > 0) grantsInFlight.splice(s.pick % grantsInFlight.length, 1);
            break;
          }
          case "send": {
            if (!senderCanSend(sender, s.bytes)) break;
            sender = senderRecordSend(sender, s.bytes);
            unitsInFlight.push({ bytes: s.bytes, sentThrough: sender.sentThrough });
            break;
          }
          case "deliverUnit": {
            const u = unitsInFlight.shift();
            if (!u || s.lose) break;
            receiver = receiverOnArrival(receiver, u.bytes, u.sentThrough).window; // throws on violation
            if (s.duplicate) {
              const again = receiverOnArrival(receiver, u.bytes, u.sentThrough);
              if (!again.replayed || again.consumed !== 0) return false;
              receiver = again.window;
            }
            break;
          }
        }
        if (sender.sentThrough > receiver.grantedThrough) return false;
        if (sender.sentThrough > sender.grantedThrough) return false;
        if (receiverOutstanding(receiver) > maxOutstanding) return false;
        if (receiver.consumedThrough > sender.sentThrough) return false;
      }
      return true;
    }),
    { numRuns: 300 },
  );
  t.pass();
});
