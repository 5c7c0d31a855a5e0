import test from "ava";
import fc from "fast-check";
import { makeTransportUnit, RangeSet } from "../../lanes/index.ts";
import { parseHolderConfig, type HolderConfig, type ProtectedRamEvidence } from "../../actors/holder/holder-config.ts";
import { initialHolderState, type HolderPlainState } from "../../actors/holder/holder-state.ts";
import { evidenceDegrades, holderStep, type EvidenceUpdate } from "../../actors/holder/holder-step.ts";
import { noteAdmitted } from "../../actors/holder/receipt-batches.ts";
import {
  auditSubject,
  baseReadySpec,
  creditSpec,
  encodeMessage,
  encodeTransferOffer,
  fetchSubject,
  releaseFrontierSpec,
  retentionChallengeSpec,
  unitFetchSpec,
  unitSpec,
} from "../../transport/protocol/index.ts";
import { receiptBatchSpec } from "../../custody/index.ts";
import { batchOf, receipt, signed } from "../custody/receipt-fixtures.ts";

/**
 * The holder's pure steps (actors/holder/holder-step.ts): (state, event, nowMs) → state and effects
 * as data. No NATS, no files, no clock: every input is built here and every effect is asserted.
 */

const evidence: ProtectedRamEvidence = {
  protectedBytes: 64 << 20,
  batteryHealth: 0.95,
  holdUpMs: 1000,
  autonomousPreservation: true,
  drainBytesPerSec: 100 << 20,
  detectionMs: 10,
  persistenceCompletionMs: 50,
  marginMs: 40,
  measuredAt: 1_000,
  capabilityGeneration: 1,
};

function config(extra: Partial<Parameters<typeof parseHolderConfig>[0]> = {}): HolderConfig {
  const parsed = parseHolderConfig({
    holderId: "h1",
    incarnation: 1,
    site: { region: "r1", az: "a", host: "x" },
    residency: ["ram"],
    lanes: [{ volume: "vol1", lane: "l1", upstream: ["w"], downstream: ["h2"] }],
    arena: { limitBytes: 1 << 20 },
    receipts: { maxUnits: 3, maxDelayMs: 10 },
    epoch: 2,
    ...extra,
  });
  return { ...parsed, incarnation: 1 };
}

function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === "object" && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

const release = (f: { holder?: string; lane?: string; epoch?: number; ranges?: [number, number][] }) => ({
  type: "nats.release" as const,
  msg: {
    data: encodeMessage(releaseFrontierSpec, {
      holder: f.holder ?? "h1",
      volume: "vol1",
      lane: f.lane ?? "l1",
      ranges: f.ranges ?? [[1, 10]],
      epoch: f.epoch ?? 2,
      controlSeq: 7,
    }),
  },
});

const base = (throughSeq: number, holder = "h1", lane = "l1") => ({
  type: "nats.base" as const,
  msg: {
    data: encodeMessage(baseReadySpec, { holder, volume: "vol1", lane, snapshotId: `s${throughSeq}`, throughSeq, bytes: 4096 }),
  },
});

const rejected = (code: string) => [
  { type: "count", name: code },
  { type: "observe", observation: { type: "rejected", code } },
];

test("a release frontier for us or an edge of the lane is applied as data; the state is the very same object", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  for (const holder of ["h1", "h2"]) {
    const r = holderStep(s, release({ holder }), 0);
    t.is(r.state, s);
    t.is(r.effects.length, 1);
    const e = r.effects[0]!;
    if (e.type !== "applyFrontier") return t.fail(`unexpected ${e.type}`);
    t.is(e.lane, "vol1/l1");
    t.is(e.holder, holder);
    t.is(e.ranges.toString(), "1-10");
  }
});

test("a frontier for another holder, an older epoch or an unknown lane, or unreadable bytes, is refused and changes nothing", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const cases: [ReturnType<typeof release> | { type: "nats.release"; msg: { data: Uint8Array } }, string][] = [
    [release({ holder: "h9" }), "wrong_holder"],
    [release({ epoch: 1 }), "stale_epoch"],
    [release({ lane: "l9" }), "unknown_lane"],
    [{ type: "nats.release", msg: { data: new Uint8Array([1, 2, 3]) } }, "malformed"],
  ];
  for (const [event, code] of cases) {
    const r = holderStep(s, event, 0);
    t.is(r.state, s, code);
    if (code === "malformed") {
      t.is(r.effects.length, 2);
      t.is(r.effects[0]!.type, "count", "an unreadable frontier is counted under its decode code");
    } else t.deepEqual(r.effects, rejected(code));
  }
});

test("a newer base announcement is kept in the state, counted and receipted at once with the open batch", (t) => {
  let s: HolderPlainState = initialHolderState(config());
  const link = { traceId: "a".repeat(32), spanId: "b".repeat(16), traceFlags: 1 };
  s = { ...s, receipts: noteAdmitted(s.receipts, s.config.receipts, "vol1/l1", 5, link).batches };
  s = deepFreeze(s);
  const r = holderStep(s, base(40), 9);
  t.deepEqual(r.state.lanes["vol1/l1"]!.base, { snapshotId: "s40", throughSeq: 40, bytes: 4096 });
  t.deepEqual(r.state.receipts.open, {}, "the open batch went out with the receipt");
  t.deepEqual(r.effects, [
    { type: "count", name: "base_announced" },
    { type: "publishReceipt", lane: "vol1/l1", units: 2, links: [link] },
  ]);
  t.is(s.lanes["vol1/l1"]!.base, undefined, "the input state is untouched");
  const older = holderStep(deepFreeze(r.state), base(40), 10);
  t.is(older.state, r.state, "an equal or older base changes nothing");
  t.deepEqual(older.effects, []);
});

test("a base announcement for another holder or a lane we do not serve is refused and changes nothing", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  for (const [event, code] of [
    [base(3, "h9"), "wrong_holder"],
    [base(3, "h1", "l9"), "unknown_lane"],
  ] as const) {
    const r = holderStep(s, event, 0);
    t.is(r.state, s);
    t.deepEqual(r.effects, rejected(code));
  }
});

test("timer.receipts publishes the due batches and re-arms for the earliest one left", (t) => {
  const cfg = config({
    lanes: [
      { volume: "vol1", lane: "l1", upstream: ["w"] },
      { volume: "vol1", lane: "l2", upstream: ["w"] },
    ],
  });
  let s = initialHolderState(cfg);
  const p = cfg.receipts;
  let b = noteAdmitted(s.receipts, p, "vol1/l1", 100).batches;
  b = noteAdmitted(b, p, "vol1/l2", 104).batches;
  s = deepFreeze({ ...s, receipts: { ...b, armed: true } });
  const r = holderStep(s, { type: "timer.receipts" }, 110);
  t.deepEqual(r.effects, [
    { type: "publishReceipt", lane: "vol1/l1", units: 1, links: [] },
    { type: "arm", ms: 4, event: { type: "timer.receipts" } },
  ]);
  t.deepEqual(Object.keys(r.state.receipts.open), ["vol1/l2"]);
  t.true(r.state.receipts.armed);
  const last = holderStep(deepFreeze(r.state), { type: "timer.receipts" }, 114);
  t.deepEqual(last.effects, [{ type: "publishReceipt", lane: "vol1/l2", units: 1, links: [] }]);
  t.deepEqual(last.state.receipts, { open: {}, armed: false }, "nothing pending, no timer");
});

test("property: after timer.receipts no batch left is due, the timer is armed exactly when one is left, and no unit is lost", (t) => {
  const cfg = config();
  fc.assert(
    fc.property(
      fc.array(fc.record({ lane: fc.constantFrom("a", "b", "c"), dt: fc.nat(8) }), { maxLength: 40 }),
      fc.nat(30),
      (notes, wait) => {
        let s = initialHolderState(cfg);
        let now = 0;
        let noted = 0;
        let published = 0;
        for (const n of notes) {
          now += n.dt;
          const r = noteAdmitted(s.receipts, cfg.receipts, n.lane, now);
          noted++;
          // A full batch goes out at once (as the lane runtime does), so none is left over-full.
          if (r.full) {
            published += r.batches.open[n.lane]!.units;
            const { [n.lane]: _gone, ...open } = r.batches.open;
            s = { ...s, receipts: { ...r.batches, open } };
          } else s = { ...s, receipts: r.batches };
        }
        const at = now + wait;
        const r = holderStep(deepFreeze(s), { type: "timer.receipts" }, at);
        for (const e of r.effects) if (e.type === "publishReceipt") published += e.units;
        const left = Object.values(r.state.receipts.open);
        for (const b of left) if (at - b.openedAt >= cfg.receipts.maxDelayMs) return false;
        const units = left.reduce((n, b) => n + b.units, 0);
        return r.state.receipts.armed === left.length > 0 && published + units === noted;
      },
    ),
  );
  t.pass();
});

test("new evidence replaces the old as data; it degrades the holder only when protected RAM is configured and the bound fails", (t) => {
  const protectedCfg = config({
    residency: ["ram", "protected_ram"],
    protectedRam: { evidence, maxEvidenceAgeMs: 5_000, minBatteryHealth: 0.8 },
  });
  const s = deepFreeze(initialHolderState(protectedCfg));
  t.deepEqual(s.evidence, evidence);
  const fresh: EvidenceUpdate = { type: "evidence.update", evidence: { ...evidence, measuredAt: 2_000 }, nowMs: 2_100, ramQueuedBytes: 1 << 20 };
  const r = holderStep(s, fresh, 2_100);
  t.deepEqual(r.state.evidence, fresh.evidence);
  t.deepEqual(r.effects, [{ type: "evidenceChanged" }]);
  t.false(evidenceDegrades(s, fresh), "fresh evidence covering 1 MiB holds");
  t.true(evidenceDegrades(s, { ...fresh, nowMs: 9_000 }), "stale evidence degrades");
  t.true(evidenceDegrades(s, { ...fresh, evidence: { ...fresh.evidence, batteryHealth: 0.5 } }), "a weak battery degrades");
  t.true(evidenceDegrades(s, { ...fresh, ramQueuedBytes: 1 << 30 }), "more queued than the bound allows degrades");
  t.false(evidenceDegrades(initialHolderState(config()), { ...fresh, nowMs: 9_000 }), "never without protected RAM");
});

test("a failed lane arena child is counted and recorded; the state is unchanged", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const r = holderStep(s, { type: "xstate.error.actor.lane-arena:vol1/l1" }, 0);
  t.is(r.state, s);
  t.deepEqual(r.effects, [
    { type: "count", name: "lane_arena_failed" },
    { type: "observe", observation: { type: "rejected", code: "lane_arena_failed.lane-arena:vol1/l1" } },
  ]);
});

const receiptFrom = (holderId: string, lane = "vol1/l1") => {
  const batch = signed(batchOf([receipt({ seq: 1, holderId })]));
  const data = encodeMessage(receiptBatchSpec, { body: batch.body, signature: batch.signature });
  return { type: "nats.receipt" as const, lane, msg: { subject: "custody.v1.receipt.vol1.l1", data, headers: {} } };
};

test("an edge's receipt batch goes on to verification as data; our own, a stranger's and one for a lane we do not serve are passed over", (t) => {
  const s = deepFreeze(initialHolderState(config({ transferNeighbor: "relay" })));
  for (const from of ["h2", "relay"]) {
    const event = receiptFrom(from);
    const r = holderStep(s, event, 0);
    t.is(r.state, s);
    t.deepEqual(
      r.effects.map((e) => (e.type === "applyLaneReceipt" ? [e.type, e.lane, e.from, e.msg === event.msg] : e.type)),
      [["applyLaneReceipt", "vol1/l1", from, true]],
      `${from}: the edge's and the transfer neighbor's go on`,
    );
  }
  for (const event of [receiptFrom("h1"), receiptFrom("h2", "vol1/l9")]) {
    const r = holderStep(s, event, 0);
    t.is(r.state, s);
    t.deepEqual(r.effects, []);
  }
  const stranger = holderStep(initialHolderState(config()), receiptFrom("relay"), 0);
  t.deepEqual(stranger.effects, [], "a holder that is neither an edge nor the neighbor is passed over");
});

test("a receipt batch whose head cannot be read is refused on its lane as receipt_<code>, and changes nothing", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const event = { type: "nats.receipt" as const, lane: "vol1/l1", msg: { subject: "x", data: new Uint8Array([9, 9, 9]), headers: {} } };
  const r = holderStep(s, event, 0);
  t.is(r.state, s);
  t.is(r.effects.length, 2);
  const [count, observe] = r.effects;
  t.true(count?.type === "count" && count.name.startsWith("receipt_"), JSON.stringify(count));
  t.like(observe, { type: "observe", observation: { type: "rejected", lane: "vol1/l1" } });
});

test("drain stops granting once: the grantors close, and a second drain changes nothing", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  t.true(s.granting);
  const r = holderStep(s, { type: "drain" }, 0);
  t.false(r.state.granting);
  t.deepEqual(r.effects, [{ type: "closeGrants" }]);
  const again = holderStep(deepFreeze(r.state), { type: "drain" }, 1);
  t.is(again.state, r.state);
  t.deepEqual(again.effects, []);
});

test("a connection change is counted; only a reconnect re-announces what was lost meanwhile", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const lost = holderStep(s, { type: "transport.connection", event: "disconnected" }, 0);
  t.is(lost.state, s);
  t.deepEqual(lost.effects, [{ type: "count", name: "connection_disconnected" }]);
  const back = holderStep(s, { type: "transport.connection", event: "reconnected" }, 0);
  t.is(back.state, s);
  t.deepEqual(back.effects, [{ type: "count", name: "connection_reconnected" }, { type: "reconnected" }]);
});

test("timer.refresh re-announces coverage, re-sends gaps, relieves pressure and arms the next refresh at its period", (t) => {
  const s = deepFreeze(initialHolderState(config(), 250));
  const r = holderStep(s, { type: "timer.refresh" }, 1_000);
  t.is(r.state, s);
  t.deepEqual(r.effects, [
    { type: "republishReceipts" },
    { type: "resendDue" },
    { type: "relievePressure" },
    { type: "arm", ms: 250, event: { type: "timer.refresh" } },
  ]);
});

const fetchOf = (f: { holder?: string; volume?: string; subjectVolume?: string; lane?: string }) => ({
  type: "nats.fetch" as const,
  msg: {
    subject: fetchSubject("h1", f.subjectVolume ?? "vol1"),
    reply: "_INBOX.1",
    headers: {},
    data: encodeMessage(unitFetchSpec, {
      holder: f.holder ?? "h1",
      volume: f.volume ?? "vol1",
      lane: f.lane ?? "l1",
      ranges: [[1, 20]],
      after: 5,
      limit: 10,
    }),
  },
});

test("a fetch request is answered only for us, for the volume its subject names, and a lane we serve; from the caller's cursor on", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const ok = holderStep(s, fetchOf({}), 0);
  t.is(ok.state, s);
  const e = ok.effects[0];
  if (e?.type !== "serveFetch") return t.fail(JSON.stringify(ok.effects));
  t.is(e.lane, "vol1/l1");
  t.is(e.wanted.toString(), "6-20", "only what comes after the cursor");
  t.is(e.limit, 10);
  const refusals: [ReturnType<typeof fetchOf>, string][] = [
    [fetchOf({ holder: "h9" }), "fetch_wrong_holder"],
    [fetchOf({ volume: "vol2", subjectVolume: "vol1" }), "fetch_volume_not_in_subject"],
    [fetchOf({ lane: "l9" }), "fetch_unknown_lane"],
    [{ ...fetchOf({}), msg: { ...fetchOf({}).msg, data: new Uint8Array([7]) } }, "fetch_malformed"],
  ];
  for (const [event, name] of refusals) {
    const r = holderStep(s, event, 0);
    t.is(r.state, s);
    t.deepEqual(r.effects, [{ type: "count", name }], name);
  }
});

test("a retention challenge is answered only for us and a lane we serve; anything else is counted and left unanswered", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const challenge = (holder: string, lane: string) => ({
    type: "nats.audit" as const,
    msg: {
      subject: auditSubject("h1"),
      headers: {},
      data: encodeMessage(retentionChallengeSpec, { holder, volume: "vol1", lane, nonce: new Uint8Array(32).fill(3), seqs: [[2, 4]] }),
    },
  });
  const ok = holderStep(s, challenge("h1", "l1"), 0);
  const e = ok.effects[0];
  if (e?.type !== "answerAudit") return t.fail(JSON.stringify(ok.effects));
  t.is(e.lane, "vol1/l1");
  t.is(e.seqs.toString(), "2-4");
  t.is(e.nonce.length, 32);
  t.deepEqual(holderStep(s, challenge("h9", "l1"), 0).effects, [{ type: "count", name: "audit_wrong_holder" }]);
  t.deepEqual(holderStep(s, challenge("h1", "l9"), 0).effects, [{ type: "count", name: "audit_unknown_lane" }]);
  const bad = { ...challenge("h1", "l1"), msg: { ...challenge("h1", "l1").msg, data: new Uint8Array([1]) } };
  t.deepEqual(holderStep(s, bad, 0).effects, [{ type: "count", name: "audit_malformed" }]);
});

test("an edge's credit grant is applied as data; one that cannot be read is refused on its lane; one for an edge we do not have changes nothing", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const grant = { holder: "h2", sender: "h1", volume: "vol1", lane: "l1", incarnation: 1, session: 1, window: 1, grantedThrough: 4096, grantSeq: 3 };
  const msg = (data: Uint8Array) => ({ subject: "custody.v1.credit.h2.vol1.l1", data, headers: {} });
  const ok = holderStep(s, { type: "nats.credit", lane: "vol1/l1", edge: "h2", msg: msg(encodeMessage(creditSpec, grant)) }, 0);
  t.is(ok.state, s);
  t.like(ok.effects, [{ type: "applyGrant", lane: "vol1/l1", edge: "h2", grant: { grantedThrough: 4096, grantSeq: 3 } }]);
  const bad = holderStep(s, { type: "nats.credit", lane: "vol1/l1", edge: "h2", msg: msg(new Uint8Array([5, 5])) }, 0);
  t.is(bad.state, s);
  t.is(bad.effects.length, 2);
  t.like(bad.effects[1], { type: "observe", observation: { type: "rejected", lane: "vol1/l1" } });
  for (const [lane, edge] of [["vol1/l1", "h9"], ["vol1/l9", "h2"]] as const) {
    const r = holderStep(s, { type: "nats.credit", lane, edge, msg: msg(encodeMessage(creditSpec, grant)) }, 0);
    t.is(r.state, s);
    t.deepEqual(r.effects, []);
  }
});

test("evacuation: entering degraded evidence moves custody out and arms the hold-up time's end once; the end reports and closes it", (t) => {
  const cfg = config({
    residency: ["ram", "protected_ram", "disk"],
    protectedRam: { evidence, maxEvidenceAgeMs: 5_000, minBatteryHealth: 0.8 },
    flush: { intervalMs: 20, deadlineMs: 10 },
  });
  const s = deepFreeze(initialHolderState(cfg));
  const start = holderStep(s, { type: "evacuation.start" }, 0);
  t.true(start.state.evacuating);
  t.deepEqual(start.effects, [{ type: "evacuate" }, { type: "arm", ms: 1000, event: { type: "timer.evacuation" } }]);
  const again = holderStep(deepFreeze(start.state), { type: "evacuation.start" }, 1);
  t.is(again.state, start.state, "an evacuation under way is not started twice");
  t.deepEqual(again.effects, []);
  const missed = { kind: "deadline_missed" as const, seqs: RangeSet.of(1, 4) };
  t.deepEqual(holderStep(start.state, { type: "flush.completed", result: missed }, 2).effects, [
    { type: "applyFlush", result: missed },
    { type: "startFlush", all: true },
  ], "during an evacuation the next flush starts at once");
  t.deepEqual(holderStep(s, { type: "flush.completed", result: missed }, 2).effects, [{ type: "applyFlush", result: missed }]);
  const end = holderStep(start.state, { type: "timer.evacuation" }, 1000);
  t.false(end.state.evacuating);
  t.deepEqual(end.effects, [{ type: "evacuationDeadline" }]);
  const none = initialHolderState(config());
  t.is(holderStep(none, { type: "evacuation.start" }, 0).state, none, "no evidence, nothing to evacuate");
});

test("timer.flush flushes and re-arms at the policy's interval; without a policy it does nothing; timer.seal seals and relieves pressure", (t) => {
  const withFlush = deepFreeze(initialHolderState(config({ residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 10 } })));
  t.deepEqual(holderStep(withFlush, { type: "timer.flush" }, 0).effects, [
    { type: "startFlush", all: false },
    { type: "arm", ms: 20, event: { type: "timer.flush" } },
  ]);
  const without = deepFreeze(initialHolderState(config()));
  t.deepEqual(holderStep(without, { type: "timer.flush" }, 0), { state: without, effects: [] });
  t.deepEqual(holderStep(without, { type: "timer.seal", lane: "vol1/l1" }, 0).effects, [
    { type: "sealDue", lane: "vol1/l1" },
    { type: "relievePressure" },
  ]);
});

test("a checked frontier and units loaded for a resend go on for a lane we serve, and are dropped for one we do not", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const ranges = RangeSet.of(1, 3);
  t.deepEqual(holderStep(s, { type: "release.checked", lane: "vol1/l1", holder: "h2", ranges }, 0).effects, [
    { type: "applyCheckedFrontier", lane: "vol1/l1", holder: "h2", ranges },
  ]);
  t.deepEqual(holderStep(s, { type: "release.checked", lane: "vol1/l9", holder: "h2", ranges }, 0).effects, []);
  t.deepEqual(holderStep(s, { type: "resend.loaded", lane: "vol1/l1", edge: "h2", units: [] }, 0).effects, [
    { type: "resendLoaded", lane: "vol1/l1", edge: "h2", units: [] },
  ]);
  t.deepEqual(holderStep(s, { type: "resend.loaded", lane: "vol1/l9", edge: "h2", units: [] }, 0).effects, []);
});

const offered = (seq: number, lane = "l1") =>
  makeTransportUnit({ volume: "vol1", lane, term: 1, firstSeq: seq, lastSeq: seq, commitTs: [seq], payload: new Uint8Array([seq]) });
const offer = (units: Uint8Array[], to = "h1") => ({
  type: "nats.transfer" as const,
  msg: {
    subject: "custody.v1.transfer.h1",
    headers: {},
    data: encodeTransferOffer({ from: "h0", to, volume: "vol1", lane: "l1", offerId: 1, units }, []),
  },
});

test("a transfer offer whose units all decode and validate for the offered lane goes on whole; any bad unit refuses it whole", (t) => {
  const s = deepFreeze(initialHolderState(config()));
  const good = [offered(1), offered(2)].map((u) => encodeMessage(unitSpec, u));
  const ok = holderStep(s, offer(good), 0);
  t.is(ok.state, s);
  t.like(ok.effects, [{ type: "admitTransfer", from: "h0", volume: "vol1", lane: "l1", tokens: [] }]);
  const e = ok.effects[0];
  t.deepEqual(e?.type === "admitTransfer" ? e.units.map((u) => u.firstSeq) : [], [1, 2]);
  const otherLane = encodeMessage(unitSpec, offered(3, "l2"));
  t.deepEqual(holderStep(s, offer([...good, otherLane]), 0).effects, [{ type: "count", name: "transfer_wrong_lane" }]);
  const tampered = { ...offered(4), payload: new Uint8Array([99]) };
  const [bad] = holderStep(s, offer([encodeMessage(unitSpec, tampered)]), 0).effects;
  t.true(bad?.type === "count" && bad.name.startsWith("transfer_"), JSON.stringify(bad));
  t.deepEqual(holderStep(s, offer(good, "h9"), 0).effects, [{ type: "count", name: "wrong_holder" }]);
  const unreadable = { ...offer(good), msg: { ...offer(good).msg, data: new Uint8Array([1, 2]) } };
  t.is(holderStep(s, unreadable, 0).effects.length, 1);
  t.is(holderStep(s, unreadable, 0).state, s);
});
