/**
 * The controller's pure step (actors/controller/controller-step.ts): receipts, writer progress and
 * admission requests folded into plain data, with effects as data. No NATS, no files, no clock:
 * (state, event) sequences in, state and effects out; refused input leaves the state unchanged.
 */
import test from "ava";
import fc from "fast-check";
import { controllerStep, type ControllerStep, type ControllerStepEvent } from "../../actors/controller/controller-step.ts";
import { initialControllerData, type ControllerData } from "../../actors/controller/controller-state.ts";
import { ledgerHoldings } from "../../actors/controller/controller-ledger.ts";
import type { ControllerConfig } from "../../actors/controller/controller-config.ts";
import { encodeAdmissionRequest } from "../../custody/admission-request.ts";
import { INITIAL_CONTROL_STATE, type ControlState, type HolderRecord } from "../../custody/control-records.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { encodeMessage } from "../../transport/protocol/wire/index.ts";
import { writerProgressSpec, type WriterProgressMessage } from "../../transport/protocol/wire/writer-messages.ts";
import type { InboundMessage } from "../../transport/transport.ts";
import { batchOf, keys, LANE, ram, receipt, signed, STREAM, T0, VOL } from "../custody/receipt-fixtures.ts";

const config = {
  controllerId: "ctl",
  topology: { volume: VOL, lanes: [LANE, "l1"], holderSites: { h1: "s1", h2: "s2" }, bases: [], staleAfterMs: 60_000 },
  repair: { standby: [{ holderId: "sb1" }] },
} as unknown as ControllerConfig;

const holder = (holderId: string, incarnation = 1, publicKey = keys[holderId]!.publicKey): HolderRecord => ({
  holderId,
  incarnation,
  publicKey,
  failureDomain: `fd-${holderId}`,
  status: "active",
});

const control = (holders: HolderRecord[], lastSeq = 7): ControlState => ({
  ...INITIAL_CONTROL_STATE,
  lastSeq,
  holders: Object.fromEntries(holders.map((h) => [h.holderId, h])),
});

const LOG = control([holder("h1"), holder("h2")]);
const msg = (subject: string, data: Uint8Array): InboundMessage => ({ subject, data, headers: {} });

const receiptMsg = (...rs: Parameters<typeof receipt>[0][]): InboundMessage =>
  msg(STREAM.subject, encodeMessage(receiptBatchSpec, signed(batchOf(rs.map(receipt)))));

const progressMsg = (lanes: WriterProgressMessage["lanes"], volume = VOL): InboundMessage =>
  msg(`custody.v1.event.${volume}`, encodeMessage(writerProgressSpec, { writer: "w", volume, term: 1, lanes, at: 1 }));

const onReceipt = (m: InboundMessage, s = LOG, nowMs = T0): ControllerStepEvent => ({
  type: "nats.receipt",
  msg: m,
  control: s,
  nowMs,
});

/** Runs `events` from `d`, collecting every effect. */
function run(d: ControllerData, events: ControllerStepEvent[]): ControllerStep & { all: ControllerStep["effects"] } {
  let r: ControllerStep = { state: d, effects: [] };
  const all: ControllerStep["effects"][number][] = [];
  for (const e of events) {
    r = controllerStep(r.state, e);
    all.push(...r.effects);
  }
  return { ...r, all };
}

function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === "object" && !Object.isFrozen(o) && !ArrayBuffer.isView(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

const held = (d: ControllerData) =>
  ledgerHoldings(d.ledger, {}, T0, 60_000).map((h) => [h.holderId, h.incarnation, h.receiptSeq, h.retained.toJSON()]);

test("a verified receipt batch enters the ledger, counted, and marks the data dirty", (t) => {
  const d0 = { ...initialControllerData(config), dirty: false };
  const r = controllerStep(d0, onReceipt(receiptMsg({ seq: 1, ranges: [[1, 10]] })));
  t.deepEqual(held(r.state), [["h1", 1, 1, [[1, 10]]]]);
  t.true(r.state.dirty);
  t.deepEqual(r.effects, [
    { type: "count", name: "receipt.accepted", by: 1 },
    { type: "count", name: "receipt_batches" },
  ]);
  t.deepEqual(held(d0), [], "the input data is not changed");
});

test("a higher receipt sequence supersedes, a lower one and a duplicate change nothing but are counted", (t) => {
  const d = initialControllerData(config);
  const r = run(d, [
    onReceipt(receiptMsg({ seq: 2, ranges: [[1, 20]] })),
    onReceipt(receiptMsg({ seq: 1, ranges: [[1, 10]] })),
    onReceipt(receiptMsg({ seq: 2, ranges: [[1, 20]] })),
  ]);
  t.deepEqual(held(r.state), [["h1", 1, 2, [[1, 20]]]]);
  t.true(r.all.some((e) => e.type === "count" && e.name === "receipt.superseded"));
  t.true(r.all.some((e) => e.type === "count" && e.name === "receipt.duplicate"));
});

test("a forged batch is refused with its code, counted twice (ledger and controller), and the data object is unchanged", (t) => {
  const d = deepFreeze(initialControllerData(config));
  const forged = msg(STREAM.subject, encodeMessage(receiptBatchSpec, signed(batchOf([receipt({ seq: 1 })]), keys.h2!.privateKey)));
  const r = controllerStep(d, onReceipt(forged));
  t.is(r.state, d);
  t.is(r.refused, "bad_signature");
  t.deepEqual(r.effects, [
    { type: "count", name: "receipt.rejected.bad_signature" },
    { type: "count", name: "receipt_bad_signature" },
  ]);
});

test("bytes that are no receipt batch are refused as invalid without a ledger count", (t) => {
  const d = initialControllerData(config);
  const r = controllerStep(d, onReceipt(msg(STREAM.subject, new Uint8Array([1, 2, 3]))));
  t.is(r.state, d);
  t.truthy(r.refused);
  t.false(r.effects.some((e) => e.type === "count" && e.name.startsWith("receipt.rejected")));
});

test("a superseded incarnation still speaking is noted as fenced (state changes only there)", (t) => {
  const d = initialControllerData(config);
  const newer = control([holder("h1", 2), holder("h2")]);
  const r = controllerStep(d, onReceipt(receiptMsg({ seq: 1 }), newer, T0 + 5));
  t.is(r.refused, "stale_incarnation");
  t.deepEqual(r.state.fenced, [{ holder: "h1", incarnation: 1, admitted: 2, lastAtMs: T0 + 5, batches: 1 }]);
  t.is(r.state.ledger, d.ledger);
});

test("writer progress raises heads and appends commit runs, merging a run that continues the last one", (t) => {
  const d = { ...initialControllerData(config), dirty: false };
  const r = run(d, [
    { type: "nats.event", msg: progressMsg([{ lane: LANE, head: 10, runs: [[1, 10, 100, 512]] }]) },
    { type: "nats.event", msg: progressMsg([{ lane: LANE, head: 12, runs: [[11, 12, 100, 512]] }]) },
    { type: "nats.event", msg: progressMsg([{ lane: LANE, head: 5, runs: [] }]) },
  ]);
  t.deepEqual(r.state.heads, { [LANE]: 12 }, "a lower head never lowers it");
  t.deepEqual(r.state.history.runs, [{ lane: LANE, first: 1, last: 12, committedAtMs: 100, bytesPerSeq: 512 }]);
  t.deepEqual(r.state.history.dated, { [LANE]: [[1, 12]] });
  t.true(r.state.dirty);
});

test("progress of another volume or an unknown lane is refused whole: code, count, same data", (t) => {
  const d = deepFreeze(initialControllerData(config));
  const other = controllerStep(d, { type: "nats.event", msg: progressMsg([{ lane: LANE, head: 1, runs: [] }], "vol-x") });
  t.is(other.state, d);
  t.is(other.refused, "wrong_volume");
  t.deepEqual(other.effects, [{ type: "count", name: "wrong_volume" }]);
  const lane = controllerStep(d, {
    type: "nats.event",
    msg: progressMsg([
      { lane: LANE, head: 4, runs: [] },
      { lane: "l9", head: 4, runs: [] },
    ]),
  });
  t.is(lane.state, d);
  t.is(lane.refused, "progress_unknown_lane");
  const garbage = controllerStep(d, { type: "nats.event", msg: msg("custody.v1.event.vol1", new Uint8Array([0xc1])) });
  t.is(garbage.state, d);
  t.deepEqual(garbage.effects, [{ type: "count", name: garbage.refused! }]);
});

test("a newly admitted incarnation drops the older one's holdings and tells the holder its frontiers", (t) => {
  const d = run(initialControllerData(config), [
    { type: "control.folded", control: LOG },
    onReceipt(receiptMsg({ seq: 1 })),
  ]).state;
  t.is(held(d).length, 1);
  const next = controllerStep(d, { type: "control.folded", control: control([holder("h1", 2), holder("h2")], 9) });
  t.deepEqual(held(next.state), []);
  t.deepEqual(next.state.admitted, { h1: 2, h2: 1 });
  t.deepEqual(
    next.effects.filter((e) => e.type === "publishFrontier").map((e) => e.type === "publishFrontier" && e.frontier),
    [LANE, "l1"].map((lane) => ({ holder: "h1", volume: VOL, lane, ranges: [], epoch: 1, controlSeq: 9 })),
  );
  t.true(next.effects.some((e) => e.type === "count" && e.name === "incarnation_admitted"));
  t.is(controllerStep(next.state, { type: "control.folded", control: LOG }).state, next.state, "an older log changes nothing");
});

test("an admission request of a known holder's newer incarnation is committed once; its outcome comes back as an event", (t) => {
  const k2 = generateHolderKeyPair();
  const req = { holderId: "h1", incarnation: 2, publicKey: keys.h1!.publicKey, failureDomain: "fd-h1", at: 1 };
  const ask: ControllerStepEvent = { type: "nats.admit", msg: msg("custody.v1.admit", encodeAdmissionRequest(req, keys.h1!.privateKey)), control: LOG };
  const first = controllerStep(initialControllerData(config), ask);
  t.deepEqual(first.state.admitting, ["h1#2"]);
  t.deepEqual(first.effects.map((e) => e.type), ["commitAdmission"]);
  const again = controllerStep(first.state, ask);
  t.is(again.state, first.state);
  t.deepEqual(again.effects, [], "a repeated request while the commit is in flight commits nothing more");
  const done = controllerStep(first.state, { type: "admission.committed", key: "h1#2", control: control([holder("h1", 2), holder("h2")]) });
  t.deepEqual(done.state.admitting, []);
  t.true(done.effects.some((e) => e.type === "count" && e.name === "admission_committed"));
  const failed = controllerStep(first.state, { type: "admission.failed", key: "h1#2", code: "conflict" });
  t.deepEqual(failed.state.admitting, []);
  t.deepEqual(failed.effects, [{ type: "count", name: "admission_conflict" }]);
  // Another key is a refusal of key continuity: counted, nothing committed.
  const rekeyed = { ...req, publicKey: k2.publicKey };
  const refused = controllerStep(first.state, { ...ask, msg: msg("custody.v1.admit", encodeAdmissionRequest(rekeyed, k2.privateKey)) });
  t.is(refused.state, first.state);
  t.truthy(refused.refused);
  t.deepEqual(refused.effects, [{ type: "count", name: refused.refused! }]);
});

test("admission requests of strangers and not-yet-enlisted standbys are ignored; a stale one is refused uncounted", (t) => {
  const d = deepFreeze(initialControllerData(config));
  const stranger = generateHolderKeyPair();
  const ask = (holderId: string, incarnation: number, k = stranger) =>
    controllerStep(d, {
      type: "nats.admit",
      msg: msg("a", encodeAdmissionRequest({ holderId, incarnation, publicKey: k.publicKey, failureDomain: "x", at: 1 }, k.privateKey)),
      control: LOG,
    });
  for (const r of [ask("zz", 2), ask("sb1", 1)]) {
    t.is(r.state, d);
    t.deepEqual(r.effects, []);
  }
  const stale = ask("h1", 1, keys.h1 as never);
  t.is(stale.state, d);
  t.deepEqual(stale.effects, []);
  t.is(stale.refused, "admission_not_newer");
});

test("a round clears dirty, a nudge sets it; sightings date undated sequences once, trims fold the history", (t) => {
  const d = controllerStep(initialControllerData(config), { type: "round.started" }).state;
  t.false(d.dirty);
  t.true(controllerStep(d, { type: "nudge" }).state.dirty);
  const withRuns = controllerStep(d, { type: "nats.event", msg: progressMsg([{ lane: LANE, head: 20, runs: [[1, 10, 100, 8]] }]) }).state;
  const seen = controllerStep(withRuns, { type: "sighted", sightings: [{ lane: LANE, ranges: [[1, 20]] }], nowMs: 500 }).state;
  t.deepEqual(seen.history.sightings.runs, [{ lane: LANE, first: 11, last: 20, committedAtMs: 500, bytesPerSeq: 0 }]);
  const again = controllerStep(seen, { type: "sighted", sightings: [{ lane: LANE, ranges: [[1, 20]] }], nowMs: 900 });
  t.is(again.state, seen, "a sequence already sighted keeps its first sighting");
  const trimmed = controllerStep(seen, { type: "history.trim", bounds: { floor: { [LANE]: 20 }, horizon: { [LANE]: 15 } } }).state;
  t.deepEqual(trimmed.history.sightings.runs.map((r) => [r.first, r.last]), [[15, 20]]);
});

test("property: receipt batches fold to the same ledger in any order, and the step never mutates its input", (t) => {
  const seqs = [1, 2, 3, 4, 5].map((seq) => receiptMsg({ seq, ranges: [[seq, seq * 10]], residency: ram(T0 + seq) }));
  const sorted = run(initialControllerData(config), seqs.map((m) => onReceipt(m))).state;
  fc.assert(
    fc.property(fc.shuffledSubarray(seqs, { minLength: seqs.length }), (order) => {
      const start = deepFreeze(initialControllerData(config));
      const r = run(start, order.map((m) => onReceipt(m)));
      return JSON.stringify(held(r.state)) === JSON.stringify(held(sorted));
    }),
    { numRuns: 30 },
  );
  t.deepEqual(held(sorted), [["h1", 1, 5, [[5, 50]]]]);
  t.deepEqual(RangeSet.fromJSON(held(sorted)[0]![3] as [number, number][]).toJSON(), [[5, 50]]);
});

test("release memory: a committed release dates its holder, planned durable holders only grow", (t) => {
  const d = deepFreeze(initialControllerData(config));
  const committed = controllerStep(d, { type: "release.committed", holder: "h1", nowMs: 42 });
  t.deepEqual(committed.state.releases.lastReleaseAt, { h1: 42 });
  const planned = controllerStep(committed.state, { type: "releases.planned", durable: ["h2"] });
  t.deepEqual(planned.state.releases.durable, ["h2"]);
  t.is(controllerStep(planned.state, { type: "releases.planned", durable: ["h2"] }).state, planned.state);
  t.deepEqual(d.releases, { lastReleaseAt: {}, durable: [] }, "the frozen input is untouched");
});

test("a round's end keeps its status document and publishes it as an effect", (t) => {
  const d = deepFreeze(initialControllerData(config));
  const status = { volume: VOL, controller: "ctl", asOfMs: 5, controlSeq: 9 } as never;
  const r = controllerStep(d, { type: "round.done", status });
  t.is(r.state.status, status);
  t.deepEqual(r.effects, [{ type: "publishStatus", status }]);
  t.is(d.status, undefined);
});

test("bases, recoveries and a reconnect are plain data: each marks a round due; frontiers are re-sent at the next log read", (t) => {
  const d = deepFreeze({ ...initialControllerData(config), dirty: false });
  const base = { id: "b1", holder: "h2", cut: { [LANE]: 10 }, bytes: 1 };
  const based = controllerStep(d, { type: "base.added", base }).state;
  t.deepEqual(based.bases, [base]);
  t.true(based.dirty);
  const reading = controllerStep(d, { type: "recovery.begun", recovery: { id: "r1", lane: LANE, ranges: [[1, 5]] } }).state;
  t.deepEqual(Object.keys(reading.recoveries), ["r1"]);
  t.deepEqual(controllerStep(reading, { type: "recovery.ended", id: "r1" }).state.recoveries, {});
  const quiet = controllerStep(d, { type: "connection", change: "disconnected" });
  t.is(quiet.state, d);
  t.deepEqual(quiet.effects, [{ type: "count", name: "connection_disconnected" }]);
  const back = controllerStep(d, { type: "connection", change: "reconnected" }).state;
  t.true(back.frontiersDue && back.dirty);
  const read = controllerStep(back, { type: "control.folded", control: LOG });
  t.false(read.state.frontiersDue);
  t.deepEqual(
    read.effects.flatMap((e) => (e.type === "publishFrontier" ? [`${e.frontier.holder}/${e.frontier.lane}`] : [])),
    ["h1/l0", "h1/l1", "h2/l0", "h2/l1"],
  );
  t.deepEqual(controllerStep(read.state, { type: "control.folded", control: LOG }).effects, [], "once");
});
