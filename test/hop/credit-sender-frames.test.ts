import test from "ava";
import fc from "fast-check";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { CreditSender, type QueuedUnit } from "../../actors/hop/index.ts";
import { CreditError } from "../../actors/hop/index.ts";
import { readUnitMessage, senderOf } from "../../transport/unit-frames.ts";
import type { InboundMessage, MessageHeaders, Transport } from "../../transport/transport.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";

/** A transport that records what is published on the unit subject and answers nothing. */
function recordingTransport(): Transport & { sent: InboundMessage[] } {
  const sent: InboundMessage[] = [];
  return {
    name: "recording",
    sent,
    publish(subject: string, data: Uint8Array, opts?: { headers?: MessageHeaders }) {
      if (subject.startsWith("custody.v1.unit.")) sent.push({ subject, data, headers: opts?.headers ?? {} });
    },
    subscribe: (subject) => ({ subject, unsubscribe() {}, async drain() {} }),
    request: () => Promise.reject(new Error("no requests here")),
    respond() {},
    flush: async () => {},
    close: async () => {},
  };
}

function unit(seq: number, payloadBytes: number): QueuedUnit {
  const data = encodeMessage(unitSpec, { volume: "v", lane: "l", term: 1, firstSeq: seq, lastSeq: seq, commitTs: [seq], payload: new Uint8Array(payloadBytes), digest: new Uint8Array(32) });
  return { data, bytes: payloadBytes + 40 };
}

/** Every unit the recorded messages carried, in order, with its cumulative figure and the message's. */
function unitsSent(sent: InboundMessage[]): { seq: number; sentThrough: number; message: number; header: number }[] {
  return sent.flatMap((m, message) => {
    const header = senderOf(m.headers).sentThrough!;
    const read = readUnitMessage(m, header);
    if (read.kind === "credit-request") return []; // a blocked sender asks on the same subject
    if (read.kind !== "units") throw new Error(`unexpected ${read.kind}`);
    return read.units.map((u) => ({ seq: u.unit!.firstSeq, sentThrough: u.sentThrough ?? header, message, header }));
  });
}

const grant = (through: number, seqNo = 1) => ({ holder: "h1", sender: "w1", volume: "v", lane: "l", incarnation: 1, session: 1, window: 1, grantedThrough: through, grantSeq: seqNo });
const microtasks = () => new Promise<void>((r) => setImmediate(r));

test("units queued in one turn leave together as one frame at the end of the turn; a lone unit goes bare", async (t) => {
  const transport = recordingTransport();
  const s = new CreditSender({ transport, clock: new SimulatedClock(), sender: "w1", holder: "h1", volume: "v", lane: "l" });
  s.onGrant(grant(1 << 20));
  for (let i = 1; i <= 5; i++) s.send(unit(i, 100));
  t.is(transport.sent.length, 0, "nothing is published before the turn ends");
  await microtasks();
  t.is(transport.sent.length, 1);
  t.deepEqual(unitsSent(transport.sent).map((u) => [u.seq, u.sentThrough]), [[1, 140], [2, 280], [3, 420], [4, 560], [5, 700]]);
  t.is(unitsSent(transport.sent)[0]!.header, 700, "the message header states the cumulative figure through its last unit");
  s.send(unit(6, 100));
  await microtasks();
  const lone = transport.sent[1]!;
  t.deepEqual(lone.data, unit(6, 100).data, "a lone unit is its own bare encoding");
  t.deepEqual([s.messagesSent, s.unitsSent], [2, 6]);
});

test("frames stop at maxFrameBytes and maxFrameUnits; maxFrameUnits 1 turns framing off", async (t) => {
  const transport = recordingTransport();
  const s = new CreditSender({ transport, clock: new SimulatedClock(), sender: "w1", holder: "h1", volume: "v", lane: "l", maxFrameBytes: 1000, maxFrameUnits: 3 });
  s.onGrant(grant(1 << 20));
  for (let i = 1; i <= 10; i++) s.send(unit(i, 300)); // ~380 encoded bytes each: two fit in 1000
  await microtasks();
  t.deepEqual(transport.sent.map((m) => unitsSent([m]).length), [2, 2, 2, 2, 2]);
  const off = recordingTransport();
  const s1 = new CreditSender({ transport: off, clock: new SimulatedClock(), sender: "w1", holder: "h1", volume: "v", lane: "l", maxFrameUnits: 1 });
  s1.onGrant(grant(1 << 20));
  for (let i = 1; i <= 4; i++) s1.send(unit(i, 10));
  await microtasks();
  t.is(off.sent.length, 4);
  const big = recordingTransport();
  const s2 = new CreditSender({ transport: big, clock: new SimulatedClock(), sender: "w1", holder: "h1", volume: "v", lane: "l", maxFrameBytes: 100 });
  s2.onGrant(grant(1 << 20));
  s2.send(unit(1, 5000));
  s2.send(unit(2, 5000));
  await microtasks();
  t.is(big.sent.length, 2, "a unit larger than a frame still goes, alone");
});

test("a frame never carries more than the grant allows; the rest waits for the next grant, in order", async (t) => {
  const transport = recordingTransport();
  const s = new CreditSender({ transport, clock: new SimulatedClock(), sender: "w1", holder: "h1", volume: "v", lane: "l" });
  s.onGrant(grant(300));
  for (let i = 1; i <= 5; i++) s.send(unit(i, 100)); // 140 credited bytes each
  await microtasks();
  t.deepEqual(unitsSent(transport.sent).map((u) => u.seq), [1, 2]);
  t.is(s.backlog.units, 3);
  s.onGrant(grant(700, 2));
  t.deepEqual(unitsSent(transport.sent).map((u) => u.seq), [1, 2, 3, 4, 5]);
  t.is(s.state.sentThrough, 700);
  t.throws(() => s.send({ data: new Uint8Array(1), bytes: -1 }), { instanceOf: CreditError });
});

test("property: whatever the unit sizes, grants and frame limits, units leave in order, within the grant, each with its own cumulative figure", async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 60 }),
      fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 1, max: 20_000 }),
      fc.integer({ min: 1, max: 50 }),
      async (sizes, grantSteps, maxFrameBytes, maxFrameUnits) => {
        const transport = recordingTransport();
        const s = new CreditSender({ transport, clock: new SimulatedClock(), sender: "w1", holder: "h1", volume: "v", lane: "l", maxFrameBytes, maxFrameUnits });
        const units = sizes.map((n, i) => unit(i + 1, n));
        units.forEach((u) => s.send(u));
        let granted = 0;
        for (const [i, step] of grantSteps.entries()) {
          granted += step;
          s.onGrant(grant(granted, i + 1));
          await microtasks();
        }
        const got = unitsSent(transport.sent);
        let cumulative = 0;
        for (const [i, u] of got.entries()) {
          cumulative += units[i]!.bytes;
          if (u.seq !== i + 1 || u.sentThrough !== cumulative || u.sentThrough > granted) return false;
        }
        // Everything that fit was sent; the first unit left behind did not fit.
        const next = units[got.length];
        return next === undefined || cumulative + next.bytes > granted;
      },
    ),
    { numRuns: 200 },
  );
  t.pass();
});

test("a queued unit its sender no longer wants leaves unsent when it reaches the head, takes no credit, and the ones behind it go out", async (t) => {
  const transport = recordingTransport();
  const s = new CreditSender({ transport, clock: new SimulatedClock(), sender: "w1", holder: "h1", volume: "v", lane: "l" });
  const dropped = new Set<number>();
  const sentSeqs: number[] = [];
  const queued = (seq: number): QueuedUnit => ({ ...unit(seq, 100), wanted: () => !dropped.has(seq), onSent: () => sentSeqs.push(seq) });
  s.onGrant(grant(280)); // room for two units of 140
  for (let i = 1; i <= 6; i++) s.send(queued(i));
  await microtasks();
  t.deepEqual(unitsSent(transport.sent).map((u) => u.seq), [1, 2]);
  // While 3-6 wait for credit, custody of 3, 4 and 6 ends.
  dropped.add(3).add(4).add(6);
  s.onGrant(grant(560, 2));
  await microtasks();
  t.deepEqual(unitsSent(transport.sent).map((u) => [u.seq, u.sentThrough]), [[1, 140], [2, 280], [5, 420]], "5 takes the credit 3 and 4 would have, and 6 is dropped too");
  t.deepEqual(sentSeqs, [1, 2, 5], "onSent only for units that went out");
  t.is(s.unitsSkipped, 3);
  t.deepEqual(s.backlog, { units: 0, bytes: 0 });
});
