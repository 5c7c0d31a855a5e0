/**
 * The replica's pure step (actors/replica/replica-step.ts): state and one event in, state and
 * effects out. No NATS, no files, no clock: units are sealed here and handed over as messages.
 */
import test from "ava";
import fc from "fast-check";
import { unitRecordBytes } from "../../arena/segment.ts";
import type { ApplyOp, ReplicaEffect } from "../../actors/replica/replica-effects.ts";
import { initialReplicaState } from "../../actors/replica/replica-state.ts";
import { replicaStep } from "../../actors/replica/replica-step.ts";
import { encodeMessage } from "../../transport/protocol/wire/index.ts";
import { unitSpec } from "../../transport/protocol/wire/messages.ts";
import { encodeUnitRun } from "../../transport/unit-frames.ts";
import {
  barrierRequest,
  block,
  config,
  counts,
  creditRequest,
  deepFreeze,
  granted,
  grants,
  KEY,
  MAX_CREDIT,
  raw,
  run,
  startedState,
  unitMessage,
  unitOf,
  WRITER,
} from "./replica-step-fixture.ts";

const WINDOW = { incarnation: 3, window: 1 };

test("started: the persisted position is where the replica stands, and each lane announces this incarnation with an empty grant", (t) => {
  const before = deepFreeze(initialReplicaState(config, KEY));
  const { state, effects } = replicaStep(before, { type: "started", incarnation: 3, flushedLsn: 41 });
  t.deepEqual([state.queuedLsn, state.appliedLsn, state.flushedLsn, state.incarnation], [41, 41, 41, 3]);
  t.deepEqual(effects, [
    {
      type: "publishGrant",
      subject: "custody.v1.credit.r1.rv.l0",
      grant: { holder: "r1", sender: WRITER, volume: "rv", lane: "l0", incarnation: 3, session: 0, window: 0, grantedThrough: 0, grantSeq: 0 },
    },
  ]);
  t.is(before.incarnation, 0, "the input state is unchanged");
});

test("a credit request opens the sender's window and grants up to the cap", (t) => {
  const { state, effects } = replicaStep(deepFreeze(startedState()), creditRequest({ session: 1 }));
  t.like(grants(effects)[0], { session: 1, window: 1, grantedThrough: MAX_CREDIT, grantSeq: 1, incarnation: 3 });
  t.like(state.lanes.l0!.senders[WRITER], { session: 1, window: 1 });
});

test("units under the current window go to the volume in one apply; the applied LSN moves when the apply completes", (t) => {
  const s0 = deepFreeze(granted());
  const u = unitOf(1, [
    { lsn: 5, lba: 0, data: block(1) },
    { lsn: 6, lba: 3, data: block(2) },
  ]);
  const { state, effects } = replicaStep(s0, unitMessage(u, { session: 1, window: WINDOW, sentThrough: unitRecordBytes(u) }));
  const applies = effects.filter((e) => e.type === "apply");
  t.deepEqual(applies, [{ type: "apply", writes: [{ lba: 0, data: block(1) }, { lba: 3, data: block(2) }], throughLsn: 6 }]);
  t.deepEqual(counts(effects), []);
  t.is(state.queuedLsn, 6);
  t.is(state.appliedLsn, 0, "not applied before the executor says so");
  t.is(state.lanes.l0!.senders[WRITER]!.rx.consumedThrough, unitRecordBytes(u));
  const done = replicaStep(deepFreeze(state), { type: "applied", throughLsn: 6 });
  t.is(done.state.appliedLsn, 6);
  t.deepEqual(done.effects, []);
});

test("a unit delivered twice is applied once: its records are counted as duplicates", (t) => {
  const u = unitOf(1, [{ lsn: 5, lba: 0, data: block(1) }]);
  const msg = unitMessage(u, { session: 1, window: WINDOW, sentThrough: unitRecordBytes(u) });
  const once = replicaStep(granted(), msg).state;
  const twice = replicaStep(deepFreeze(once), msg);
  t.deepEqual(counts(twice.effects), ["duplicate_record"]);
  t.false(twice.effects.some((e) => e.type === "apply"));
  t.is(twice.state.queuedLsn, 5);
});

test("bad messages are counted by their code and leave the state as it was", (t) => {
  const s0 = deepFreeze(granted());
  const u = unitOf(1, [{ lsn: 5, lba: 0, data: block(1) }]);
  const cases = [
    { event: unitMessage(u, { sender: "intruder", session: 1, window: WINDOW, sentThrough: unitRecordBytes(u) }), code: "unknown_sender" },
    { event: raw(new Uint8Array([0xc1, 0x00, 0xff])), code: "malformed" },
    { event: { type: "nats.message" as const, lane: "nope", msg: { subject: "x", data: new Uint8Array(), headers: {} } }, code: "unknown_lane" },
  ];
  for (const c of cases) {
    const r = replicaStep(s0, c.event);
    t.deepEqual(counts(r.effects), [c.code], c.code);
    t.is(r.state, s0, `${c.code}: state unchanged`);
    t.deepEqual(r.effects.length, 1, `${c.code}: nothing else done`);
  }
});

test("bad units account their credit but apply nothing, each counted by its code", (t) => {
  const good = (over: Parameters<typeof unitOf>[2]) => unitOf(1, [{ lsn: 5, lba: 0, data: block(1) }], over);
  const tampered = (() => {
    const u = good({});
    const payload = new Uint8Array(u.payload);
    payload[0]! ^= 1;
    return { ...u, payload };
  })();
  const cases = [
    { unit: good({ term: 1 }), code: "stale_term" },
    { unit: good({ lane: "l9" }), code: "wrong_lane" },
    { unit: good({ key: new Uint8Array(32) }), code: "payload_decrypt_failed" },
    { unit: tampered, code: "digest_mismatch" },
  ];
  for (const c of cases) {
    const s0 = deepFreeze(granted());
    const r = replicaStep(s0, unitMessage(c.unit, { session: 1, window: WINDOW, sentThrough: unitRecordBytes(c.unit) }));
    t.deepEqual(counts(r.effects), [c.code], c.code);
    t.false(r.effects.some((e) => e.type === "apply"), `${c.code}: nothing applied`);
    t.is(r.state.queuedLsn, 0);
    t.is(r.state.lanes.l0!.senders[WRITER]!.rx.consumedThrough, unitRecordBytes(c.unit), `${c.code}: its credit is used`);
  }
});

test("credit refusals: no session, a stale window (the current grant is re-sent), more than granted", (t) => {
  const u = unitOf(1, [{ lsn: 5, lba: 0, data: block(1) }]);
  const bytes = unitRecordBytes(u);
  const s0 = deepFreeze(granted());
  const noSession = replicaStep(s0, unitMessage(u, { window: WINDOW, sentThrough: bytes }));
  t.deepEqual(counts(noSession.effects), ["no_session"]);
  const stale = replicaStep(s0, unitMessage(u, { session: 1, window: { incarnation: 2, window: 1 }, sentThrough: bytes }));
  t.deepEqual(counts(stale.effects), ["stale_credit_window"]);
  t.like(grants(stale.effects)[0], { incarnation: 3, window: 1, grantedThrough: MAX_CREDIT });
  const over = replicaStep(s0, unitMessage(u, { session: 1, window: WINDOW, sentThrough: MAX_CREDIT + 1 }));
  t.deepEqual(counts(over.effects), ["credit_exceeded"]);
  for (const r of [noSession, stale, over]) t.is(r.state.queuedLsn, 0);
  t.is(over.state.lanes.l0!.senders[WRITER]!.rx.consumedThrough, 0, "an overrun accounts nothing");
});

test("a frame with one undecodable unit applies the others", (t) => {
  const a = unitOf(1, [{ lsn: 5, lba: 0, data: block(1) }]);
  const b = unitOf(2, [{ lsn: 6, lba: 1, data: block(2) }]);
  const first = unitRecordBytes(a);
  const all = first + 10 + unitRecordBytes(b); // the sender counted 10 bytes for the unit that will not decode
  const frame = encodeUnitRun([encodeMessage(unitSpec, a), new Uint8Array([1, 2, 3]), encodeMessage(unitSpec, b)], [first, first + 10, all], []);
  const r = replicaStep(granted(), raw(frame, { session: 1, window: WINDOW, sentThrough: all }));
  t.is(counts(r.effects).length, 1, "the undecodable unit is counted by its wire code");
  t.deepEqual(
    r.effects.filter((e) => e.type === "apply"),
    [{ type: "apply", writes: [{ lba: 0, data: block(1) }, { lba: 1, data: block(2) }], throughLsn: 6 }],
  );
});

test("a barrier syncs and persists what was handed to the volume, then answers: by id, or on the wire with reached", (t) => {
  const u = unitOf(1, [{ lsn: 7, lba: 0, data: block(1) }]);
  const s1 = replicaStep(granted(), unitMessage(u, { session: 1, window: WINDOW, sentThrough: unitRecordBytes(u) })).state;
  const wire = replicaStep(deepFreeze(s1), barrierRequest(9, "_INBOX.a"));
  t.deepEqual(wire.effects, [{ type: "syncVolume" }, { type: "persistPosition", seq: 1, lsn: 7 }]);
  const local = replicaStep(deepFreeze(wire.state), { type: "barrier", id: 12 });
  t.deepEqual(local.effects, [{ type: "syncVolume" }, { type: "persistPosition", seq: 2, lsn: 7 }]);
  const first = replicaStep(deepFreeze(local.state), { type: "persisted", seq: 1, lsn: 7 });
  t.deepEqual(first.effects, [{ type: "respond", subject: "unit.l0", reply: "_INBOX.a", flushedLsn: 7, reached: false }]);
  t.is(first.state.flushedLsn, 7);
  const second = replicaStep(deepFreeze(first.state), { type: "persisted", seq: 2, lsn: 7 });
  t.deepEqual(second.effects, [{ type: "reply", id: 12, value: 7 }]);
  t.deepEqual(second.state.barriers, []);
});

test("catch-up ops: records past the queued LSN are written, duplicates counted, pieces of applied writes skipped, blocks move the LSN", (t) => {
  const s0 = deepFreeze(startedState(10));
  const ops: ApplyOp[] = [
    { kind: "blocks", blocks: [{ lba: 4, data: null }, { lba: 5, data: block(5) }], asOfLsn: 20 },
    { kind: "piece", lsn: 18, lba: 6, data: block(6) },
    { kind: "record", lsn: 19, lba: 7, data: block(7) },
    { kind: "piece", lsn: 21, lba: 8, data: block(8) },
    { kind: "record", lsn: 21, lba: 9, data: block(9) },
  ];
  const r = replicaStep(s0, { type: "apply", id: 4, ops });
  t.deepEqual(counts(r.effects), ["duplicate_record"]);
  t.deepEqual(r.effects.at(-1), {
    type: "apply",
    writes: [
      { lba: 4, data: new Uint8Array(4096) },
      { lba: 5, data: block(5) },
      { lba: 8, data: block(8) },
      { lba: 9, data: block(9) },
    ],
    throughLsn: 21,
    id: 4,
  });
  const done = replicaStep(deepFreeze(r.state), { type: "applied", throughLsn: 21, id: 4 });
  t.deepEqual(done.effects, [{ type: "reply", id: 4, value: 21 }]);
  t.is(done.state.appliedLsn, 21);
  const nothing = replicaStep(deepFreeze(done.state), { type: "apply", id: 5, ops: [{ kind: "record", lsn: 3, lba: 0, data: block(1) }] });
  t.deepEqual(nothing.effects.at(-1), { type: "apply", writes: [], throughLsn: 21, id: 5 }, "a waiting caller is still answered in order");
});

test("failures: a failed write refuses its caller, a failed barrier refuses its caller and answers no wire request", (t) => {
  const s0 = deepFreeze(startedState(3));
  const w = replicaStep(s0, { type: "applyFailed", message: "EIO", id: 2 });
  t.deepEqual(w.effects, [{ type: "count", name: "replica_apply_failed" }, { type: "refuse", id: 2, code: "replica_volume_failed", message: "EIO" }]);
  t.is(w.state, s0);
  const wired = run(s0, [barrierRequest(3), { type: "barrier", id: 9 }]);
  const f1 = replicaStep(deepFreeze(wired.state), { type: "persistFailed", seq: 1, message: "EIO" });
  t.deepEqual(f1.effects, [{ type: "count", name: "replica_barrier_failed" }]);
  const f2 = replicaStep(f1.state, { type: "persistFailed", seq: 2, message: "EIO" });
  t.deepEqual(f2.effects.at(-1), { type: "refuse", id: 9, code: "replica_volume_failed", message: "EIO" });
  t.is(f2.state.flushedLsn, 3, "nothing became durable");
});

test("stop: waiting barrier callers are refused, no new credit is promised, the executors close", (t) => {
  const s1 = run(granted(), [{ type: "barrier", id: 6 }]).state;
  const r = replicaStep(deepFreeze(s1), { type: "stop" });
  t.deepEqual(r.effects, [{ type: "refuse", id: 6, code: "replica_stopped", message: "the replica stopped" }, { type: "close" }]);
  t.true(r.state.lanes.l0!.closed);
  const after = replicaStep(r.state, creditRequest({ session: 1, window: WINDOW, sentThrough: MAX_CREDIT }));
  t.like(grants(after.effects)[0], { grantedThrough: MAX_CREDIT, grantSeq: 1 }, "the current grant is re-sent, not raised");
});

/** Test data that says what it is: records are filled with their LSN, pieces with LSN + 100, blocks with zeros. */
const fillOf = (o: { kind: "record" | "piece"; lsn: number }) => (o.kind === "record" ? o.lsn : o.lsn + 100);

test("law: over any catch-up ops, an op is written exactly when its LSN is above everything applied before it, in order", (t) => {
  const lsn = fc.integer({ min: 1, max: 60 });
  const op = fc.oneof(
    fc.record({ kind: fc.constant("record" as const), lsn, lba: fc.nat(15) }),
    fc.record({ kind: fc.constant("piece" as const), lsn, lba: fc.nat(15) }),
    fc.record({ kind: fc.constant("blocks" as const), lsn: fc.integer({ min: 0, max: 60 }), lba: fc.nat(15) }),
  );
  fc.assert(
    fc.property(fc.array(fc.array(op, { maxLength: 6 }), { maxLength: 8 }), (batches) => {
      let state = startedState(5);
      let floor = 5;
      for (const [i, batch] of batches.entries()) {
        const ops: ApplyOp[] = batch.map((o) =>
          o.kind === "blocks"
            ? { kind: "blocks", blocks: [{ lba: o.lba, data: null }], asOfLsn: o.lsn }
            : { kind: o.kind, lsn: o.lsn, lba: o.lba, data: block(fillOf(o)) },
        );
        const r = replicaStep(deepFreeze(state), { type: "apply", id: i, ops });
        const applies = r.effects.filter((e): e is Extract<ReplicaEffect, { type: "apply" }> => e.type === "apply");
        if (applies.length !== 1 || applies[0]!.id !== i) return false;
        const writes = [...applies[0]!.writes];
        let duplicates = 0;
        for (const o of ops) {
          const next = writes[0];
          if (o.kind === "blocks") {
            if (next?.lba !== o.blocks[0]!.lba || next.data[0] !== 0) return false;
            writes.shift();
            floor = Math.max(floor, o.asOfLsn);
            continue;
          }
          const isWritten = next !== undefined && next.lba === o.lba && next.data[0] === fillOf(o);
          if (isWritten !== o.lsn > floor) return false;
          if (isWritten) writes.shift();
          if (isWritten && o.kind === "record") floor = o.lsn;
          if (!isWritten && o.kind === "record") duplicates++;
        }
        if (writes.length > 0 || r.state.queuedLsn !== floor || applies[0]!.throughLsn !== floor) return false;
        if (counts(r.effects).filter((c) => c === "duplicate_record").length !== duplicates) return false;
        state = r.state;
      }
      return true;
    }),
  );
  t.pass();
});
