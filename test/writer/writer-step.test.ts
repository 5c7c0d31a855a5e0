import test from "ava";
import fc from "fast-check";
import { RangeSet } from "../../lanes/index.ts";
import { encodeMessage, releaseFrontierSpec, volumeStatusSpec, type VolumeStatus } from "../../transport/protocol/index.ts";
import type { VolumeWriterConfig } from "../../actors/writer/writer-config.ts";
import type { WriterEffect } from "../../actors/writer/writer-effects.ts";
import type { WriterEvent } from "../../actors/writer/writer-events.ts";
import { initialWriterState, type WriterState } from "../../actors/writer/writer-state.ts";
import { writerStep } from "../../actors/writer/writer-step.ts";
import { listToArray } from "../../actors/writer/chunked-list.ts";

// The volume writer's pure step (issue #48): no NATS, no files, no clock — (state, event) in,
// (state, effects) out, and the input state is never changed.

const BLOCK = 4096;
const site = (id: string, az: string) => ({ id, region: "us-east", az, host: `${id}-host`, deps: [] });
const config = (over: Partial<VolumeWriterConfig> = {}): VolumeWriterConfig => ({
  writerId: "w1",
  volume: "vol",
  term: 1,
  lanes: [{ lane: "l0", fromLba: 0, toLba: 63, holders: ["h1", "h2"] }],
  contracts: [{ name: "az-loss", losses: ["az:use1-az1"] }],
  holderSites: { h1: site("s1", "use1-az1"), h2: site("s2", "use1-az2") },
  topologyEpoch: 1,
  policyGeneration: 1,
  progressIntervalMs: 50,
  ...over,
});
const fresh = (over: Partial<VolumeWriterConfig> = {}, hasOutbox = false) =>
  initialWriterState(config(over), { hasOutbox });

/** Freezes `v` deeply (typed arrays cannot be frozen; they are left as they are). */
function deepFreeze<T>(v: T): T {
  if (v === null || typeof v !== "object" || ArrayBuffer.isView(v) || Object.isFrozen(v)) return v;
  Object.freeze(v);
  for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  return v;
}

/** Runs events through the step, collecting every effect. */
function run(s: WriterState, ...events: WriterEvent[]): { state: WriterState; effects: WriterEffect[] } {
  const effects: WriterEffect[] = [];
  for (const e of events) {
    const r = writerStep(s, e);
    s = r.state;
    effects.push(...r.effects);
  }
  return { state: s, effects };
}

const of = <T extends WriterEffect["type"]>(fx: WriterEffect[], type: T) =>
  fx.filter((e): e is Extract<WriterEffect, { type: T }> => e.type === type);
const counted = (fx: WriterEffect[]) => of(fx, "count").map((c) => c.name);
const block = (n = 1, fill = 7) => new Uint8Array(n * BLOCK).fill(fill);
const written = (nowMs: number, ...w: [id: number, lba: number, lsn: number][]): WriterEvent => ({
  type: "wal.written",
  nowMs,
  writes: w.map(([id, lba, lsn]) => ({ id, lba, lsn, data: block() })),
});
const sealed = (first: number, last: number, nowMs = 10): WriterEvent => ({
  type: "unit.sealed",
  nowMs,
  lane: "l0",
  unit: { firstSeq: first, lastSeq: last, data: new Uint8Array(100), bytes: 100 * (last - first + 1) },
});
const receipt = (holder: string, first: number, last: number, incarnation = 1, writerTerm = 1): WriterEvent => ({
  type: "receipt",
  lane: "l0",
  holder,
  incarnation,
  receipts: [{ writerTerm, topologyEpoch: 1, receiptSeq: 1, retained: RangeSet.of(first, last) }],
});

test("a write goes to SmartWAL, counted in flight; a malformed one is refused and counted, the state untouched", (t) => {
  const s = deepFreeze(fresh());
  const ok = writerStep(s, { type: "write", id: 1, lba: 3, data: block() });
  t.deepEqual(ok.state, { ...s, walInFlight: 1 });
  t.deepEqual(ok.effects.map((e) => e.type), ["walWrite"]);
  for (const [lba, data] of [[64, block()], [0, new Uint8Array(100)], [-1, block()]] as const) {
    const bad = writerStep(s, { type: "write", id: 2, lba, data });
    t.is(bad.state, s);
    t.deepEqual(counted(bad.effects), ["write_rejected"]);
    t.is(of(bad.effects, "refuse")[0]?.refusal.kind, "rejected");
  }
});

test("the write calls of one turn as one event: each admitted as its own write would be, in order", (t) => {
  const calls = [
    { id: 1, lba: 0, data: block() },
    { id: 2, lba: 64, data: block() }, // past the volume: refused, the others go on
    { id: 3, lba: 1, data: block() },
  ];
  for (const s of [deepFreeze(fresh()), deepFreeze(run(fresh({ maxCustodyBacklogBytes: 100 }), sealed(1, 1)).state)]) {
    const one = writerStep(s, { type: "writes", writes: calls });
    t.deepEqual(one, run(s, ...calls.map((c): WriterEvent => ({ type: "write", ...c }))));
  }
  const batched = writerStep(deepFreeze(fresh()), { type: "writes", writes: calls });
  t.deepEqual(batched.effects.map((e) => [e.type, "id" in e ? e.id : undefined]), [
    ["walWrite", 1],
    ["count", undefined],
    ["refuse", 2],
    ["walWrite", 3],
  ]);
  const held = writerStep(deepFreeze(run(fresh({ maxCustodyBacklogBytes: 100 }), sealed(1, 1)).state), {
    type: "writes",
    writes: calls,
  });
  t.deepEqual(held.state.waiting.map((w) => w.id), [1, 3], "past the bound both valid writes wait, in order");
});

test("completed writes join the lane's open unit, are acknowledged in order, and schedule ONE group-commit cut", (t) => {
  // Five writes in flight: the first completions wait (one cut scheduled) for the ones still in flight.
  const calls = [0, 1, 2, 3, 4].map((lba) => ({ id: lba + 1, lba, data: block() }));
  const s0 = deepFreeze(writerStep(fresh(), { type: "writes", writes: calls }).state);
  t.is(s0.walInFlight, 5);
  const a = writerStep(s0, written(5, [1, 0, 10], [2, 1, 11], [3, 2, 12]));
  t.deepEqual(of(a.effects, "reply").map((r) => [r.id, r.value]), [
    [1, { lsn: 10, pieces: [{ lane: "l0", seq: 1 }] }],
    [2, { lsn: 11, pieces: [{ lane: "l0", seq: 2 }] }],
    [3, { lsn: 12, pieces: [{ lane: "l0", seq: 3 }] }],
  ]);
  t.deepEqual(of(a.effects, "schedule").map((e) => [e.timer, e.delayMs, e.event.type]), [["cut", 0, "cut"]]);
  t.is(a.state.lanes["l0"]!.pending.length, 3);
  t.is(s0.lanes["l0"]!.pending.length, 0, "the input state is not changed");
  // Runs merge records committed together with the same size.
  t.deepEqual(a.state.lanes["l0"]!.runs, [[1, 3, 5, BLOCK]]);
  const b = writerStep(deepFreeze(a.state), written(6, [4, 3, 13]));
  t.is(of(b.effects, "schedule").length, 0, "a cut is already scheduled");
  const c = writerStep(deepFreeze(b.state), { type: "cut" });
  t.deepEqual(of(c.effects, "seal").map((e) => [e.lane, e.firstSeq, e.lastSeq, e.records.length]), [["l0", 1, 4, 4]]);
  t.false(c.state.cutQueued);
  t.is(c.state.lanes["l0"]!.pending.length, 0);
  // The last one in flight completes (a failed one counts as completed too): its batch is cut at
  // once, and a scheduled cut is cancelled.
  const last = { id: 5, lba: 4, lsn: 14, data: block() };
  const d = writerStep(deepFreeze(b.state), { type: "wal.written", nowMs: 7, writes: [last], failed: 0 });
  t.deepEqual(of(d.effects, "seal").map((e) => [e.firstSeq, e.lastSeq]), [[1, 5]]);
  t.deepEqual(of(d.effects, "cancel"), [{ type: "cancel", timer: "cut" }]);
  t.deepEqual([d.state.walInFlight, d.state.cutQueued, d.state.lanes["l0"]!.pending.length], [0, false, 0]);
  const f = writerStep(deepFreeze(b.state), { type: "wal.written", nowMs: 7, writes: [], failed: 1 });
  t.deepEqual(of(f.effects, "seal").map((e) => [e.firstSeq, e.lastSeq]), [[1, 4]]);
});

test("a lone write's completion is cut at once: no timer between it and its unit", (t) => {
  const s = deepFreeze(writerStep(fresh(), { type: "write", id: 1, lba: 0, data: block() }).state);
  const r = writerStep(s, written(3, [1, 0, 10]));
  t.deepEqual(of(r.effects, "seal").map((e) => [e.firstSeq, e.lastSeq]), [[1, 1]]);
  t.deepEqual(of(r.effects, "schedule"), []);
  t.deepEqual([r.state.walInFlight, r.state.cutQueued], [0, false]);
});

test("a full unit is cut at once, inside the batch", (t) => {
  const calls = [0, 1, 2, 3].map((lba) => ({ id: lba + 1, lba, data: block() }));
  const s = writerStep(fresh({ maxUnitPayloadBytes: 2 * BLOCK }), { type: "writes", writes: calls }).state;
  const r = writerStep(s, written(1, [1, 0, 1], [2, 1, 2], [3, 2, 3]));
  t.deepEqual(of(r.effects, "seal").map((e) => [e.firstSeq, e.lastSeq]), [[1, 2]]);
  t.is(r.state.lanes["l0"]!.pending.length, 1);
});

test("a write spanning two lanes is split, and a multi-lane cut records its manifest", (t) => {
  const lanes = [
    { lane: "l0", fromLba: 0, toLba: 1, holders: ["h1"] },
    { lane: "l1", fromLba: 2, toLba: 3, holders: ["h2"] },
  ];
  const s = deepFreeze(fresh({ lanes }));
  const r = writerStep(s, { type: "wal.written", nowMs: 1, writes: [{ id: 1, lba: 1, lsn: 7, data: block(2) }] });
  t.deepEqual(of(r.effects, "reply")[0]?.value, { lsn: 7, pieces: [{ lane: "l0", seq: 1 }, { lane: "l1", seq: 1 }] });
  t.deepEqual(listToArray(r.state.cuts), [{ lsn: 7, lanes: { l0: 1, l1: 1 } }]);
});

test("a sealed unit is retained and sent to every first hop; with an outbox only after its flush", (t) => {
  const direct = writerStep(deepFreeze(fresh()), sealed(1, 3));
  t.deepEqual(direct.effects.map((e) => e.type), ["send", "count"]);
  t.is(direct.state.lanes["l0"]!.retained.toString(), "1-3");
  t.deepEqual(Object.keys(direct.state.lanes["l0"]!.sendLogs), ["h1", "h2"]);
  const s = deepFreeze(fresh({}, true));
  const a = run(s, sealed(1, 3), sealed(4, 5));
  t.deepEqual(a.effects.map((e) => e.type), ["outboxFlush"], "one flush at a time");
  t.is(a.state.outboxQueue.length, 2);
  const b = writerStep(deepFreeze(a.state), { type: "outbox.flushed", nowMs: 11, covered: 1 });
  t.deepEqual(of(b.effects, "send").map((e) => e.unit.firstSeq), [1]);
  t.deepEqual(of(b.effects, "outboxFlush").map((e) => e.covered), [1], "the rest goes with the next flush");
  const failed = writerStep(b.state, { type: "outbox.failed" });
  t.deepEqual(counted(failed.effects), ["outbox_flush_failed"]);
  t.false(failed.state.outboxFlushing);
});

test("receipts of every first hop drop the units they cover (retainUntil receipted), and the outbox forgets them", (t) => {
  const s = run(fresh({ retainUntil: "receipted" }, true), sealed(1, 3), { type: "outbox.flushed", nowMs: 11, covered: 1 }).state;
  const one = writerStep(deepFreeze(s), receipt("h1", 1, 3));
  t.is(one.state.lanes["l0"]!.units.size, 1, "h2 has not receipted");
  t.deepEqual(one.effects.map((e) => e.type), ["receiptFolded"]);
  const both = writerStep(deepFreeze(one.state), receipt("h2", 1, 3));
  t.is(both.state.lanes["l0"]!.units.size, 0);
  t.is(both.state.lanes["l0"]!.unitBytes, 0);
  t.true(both.state.lanes["l0"]!.retained.isEmpty);
  t.deepEqual(of(both.effects, "outboxDrop").map((e) => e.seqs.toString()), ["1-3"]);
});

test("by default units stay until the controller's status confirms them; a bad status changes nothing", (t) => {
  const s = run(fresh(), sealed(1, 3), written(1, [1, 0, 1], [2, 1, 2], [3, 2, 3]), receipt("h1", 1, 3), receipt("h2", 1, 3));
  t.is(s.state.lanes["l0"]!.units.size, 1);
  const status = (cut: number, volume = "vol"): VolumeStatus => ({
    volume,
    controller: "ctl-1",
    asOfMs: 1,
    controlSeq: 1,
    acknowledged: [["l0", cut]],
    survivingCut: [["l0", cut]],
    scenarios: [
      {
        name: "az-loss",
        kind: "scenario",
        required: true,
        cut: [["l0", cut]],
        lostSeqs: 0,
        lostBytes: 0,
        oldestLostAgeMs: 0,
        rtoSec: 1,
        deadlineSec: 1,
        meetsDeadline: true,
        destination: "d",
        evidence: "observed",
        contributors: [],
        flags: [],
      },
    ],
    evidence: [],
    releasesCommitted: 0,
  });
  const frozen = deepFreeze(s.state);
  for (const [data, code] of [
    [new Uint8Array([1, 2, 3]), /^status_/],
    [encodeMessage(volumeStatusSpec, status(2, "other")), /^status_wrong_volume$/],
    [encodeMessage(volumeStatusSpec, status(9)), /^status_cut_beyond_head$/],
  ] as const) {
    const bad = writerStep(frozen, { type: "nats.status", data });
    t.is(bad.state, frozen);
    t.regex(counted(bad.effects)[0]!, code);
  }
  const ok = writerStep(frozen, { type: "nats.status", data: encodeMessage(volumeStatusSpec, status(3)) });
  t.is(ok.state.lanes["l0"]!.confirmed, 3);
  t.is(ok.state.lanes["l0"]!.units.size, 0);
});

test("a protected sync waits for receipts proving its contract, then answers; otherwise it times out", (t) => {
  const s = run(fresh(), written(1, [1, 0, 1]), { type: "sync", id: 9, contract: "az-loss", timeoutMs: 500 });
  t.deepEqual(of(s.effects, "seal").map((e) => [e.firstSeq, e.lastSeq]), [[1, 1]], "a sync cuts the open unit");
  const local = of(s.effects, "syncLocal")[0]!;
  t.deepEqual(local.target, { l0: 1 });
  const waiting = writerStep(deepFreeze(s.state), { ...local, type: "sync.local", durableLsn: 1 });
  t.deepEqual(of(waiting.effects, "schedule").map((e) => [e.timer, e.delayMs]), [["waiter-9", 500]]);
  // h1's site is lost under the contract: its receipt proves nothing; h2's does.
  const h1 = writerStep(deepFreeze(waiting.state), receipt("h1", 1, 1));
  t.is(of(h1.effects, "reply").length, 0);
  const h2 = writerStep(deepFreeze(h1.state), receipt("h2", 1, 1));
  t.deepEqual(of(h2.effects, "reply").map((r) => [r.id, r.value]), [[9, { durableLsn: 1, heads: { l0: 1 } }]]);
  t.deepEqual(of(h2.effects, "cancel").map((c) => c.timer), ["waiter-9"]);
  t.is(h2.state.waiters.length, 0);
  const late = writerStep(deepFreeze(h1.state), { type: "waiter.timeout", id: 9 });
  t.deepEqual(counted(late.effects), ["protection_timeout"]);
  t.is(of(late.effects, "refuse")[0]?.refusal.kind, "protection_timeout");
  t.is(late.state.waiters.length, 0);
  const unknown = writerStep(s.state, { type: "sync", id: 10, contract: "nope" });
  t.deepEqual(counted(unknown.effects), ["unknown_contract"]);
  t.is(unknown.state, s.state);
});

test("a receipt the obligations refuse (older incarnation) or the ingress could not verify changes nothing", (t) => {
  const s = deepFreeze(run(fresh(), sealed(1, 3), receipt("h1", 1, 1, 2)).state);
  const stale = writerStep(s, receipt("h1", 1, 3, 1));
  t.is(stale.state, s);
  t.deepEqual(counted(stale.effects), ["receipt_stale_incarnation"]);
  const invalid = writerStep(s, { type: "receipt.invalid", lane: "l0", code: "bad_signature" });
  t.is(invalid.state, s);
  t.deepEqual(counted(invalid.effects), ["receipt_bad_signature"]);
  const newer = writerStep(s, receipt("h2", 1, 3, 1, 5));
  t.is(newer.state.newestTerm, 5, "a receipt under a newer term tells of the writer that took over");
  t.deepEqual(counted(newer.effects), ["receipt_other_term"]);
  t.true(newer.state.lanes["l0"]!.proven["h2"]!.isEmpty);
});

test("a first hop's release frontier is checked against the control log, then ends what is owed to it", (t) => {
  const s = deepFreeze(run(fresh({ retainUntil: "receipted" }), sealed(1, 3), receipt("h1", 1, 3)).state);
  const frontier = (over: object) =>
    encodeMessage(releaseFrontierSpec, { holder: "h2", volume: "vol", lane: "l0", ranges: [[1, 3]], epoch: 1, controlSeq: 4, ...over });
  for (const [data, name] of [
    [new Uint8Array([9]), /^edge_release_/],
    [frontier({ holder: "h9" }), /^edge_release_not_ours$/],
    [frontier({ epoch: 0 }), /^edge_release_stale_epoch$/],
  ] as const) {
    const bad = writerStep(s, { type: "nats.release", data });
    t.is(bad.state, s);
    t.regex(counted(bad.effects)[0]!, name);
  }
  const asked = writerStep(s, { type: "nats.release", data: frontier({}) });
  t.deepEqual(of(asked.effects, "backRelease").map((e) => [e.holder, e.ranges.toString()]), [["h2", "1-3"]]);
  const checked = writerStep(s, { type: "release.checked", lane: "l0", holder: "h2", ranges: RangeSet.of(1, 2), unverified: true });
  t.deepEqual(counted(checked.effects), ["edge_release_unverified"]);
  t.is(checked.state.lanes["l0"]!.units.size, 1, "a unit goes only once wholly covered");
  t.is(checked.state.lanes["l0"]!.ledger.edges["h2"]!.covered.toString(), "1-2");
});

test("past the backlog bound writes wait in order, and go once receipts make room", (t) => {
  const s = run(fresh({ retainUntil: "receipted", maxCustodyBacklogBytes: 100 }), sealed(1, 1)).state;
  const w = run(s, { type: "write", id: 1, lba: 0, data: block() }, { type: "write", id: 2, lba: 1, data: block() });
  t.deepEqual(counted(w.effects), ["write_backpressure", "write_backpressure"]);
  t.is(of(w.effects, "walWrite").length, 0);
  const freed = run(w.state, receipt("h1", 1, 1), receipt("h2", 1, 1));
  t.deepEqual(of(freed.effects, "walWrite").map((e) => e.id), [1, 2]);
  t.is(freed.state.waiting.length, 0);
});

test("gap repair re-sends what a first hop has not receipted a while after its last send, backing off; a busy one is skipped", (t) => {
  const s = run(fresh({ resendAfterMs: 100 }), sealed(1, 2, 0), sealed(3, 3, 0), receipt("h1", 1, 3)).state;
  const early = writerStep(deepFreeze(s), { type: "resend.due", nowMs: 50, busy: [] });
  t.is(of(early.effects, "resend").length, 0);
  const due = writerStep(deepFreeze(s), { type: "resend.due", nowMs: 100, busy: [] });
  t.deepEqual(of(due.effects, "resend").map((e) => [e.holder, e.units.map((u) => u.firstSeq)]), [["h2", [1, 3]]]);
  t.deepEqual(of(due.effects, "count"), [{ type: "count", name: "retransmit", by: 2 }]);
  t.is(due.state.lanes["l0"]!.backoff["h2"], 2);
  const again = writerStep(due.state, { type: "resend.due", nowMs: 250, busy: [] });
  t.is(of(again.effects, "resend").length, 0, "the wait doubled");
  const busy = writerStep(deepFreeze(s), { type: "resend.due", nowMs: 100, busy: ["l0/h2"] });
  t.is(busy.state, s);
  t.deepEqual(busy.effects, []);
});

test("a first hop restarting makes everything it receipted owed again; a reconnect asks credit and re-sends at once", (t) => {
  const s = deepFreeze(run(fresh(), sealed(1, 3, 0), receipt("h1", 1, 3)).state);
  const reset = writerStep(s, { type: "edge.reset", lane: "l0", holder: "h1", incarnation: 2, restarted: true });
  t.deepEqual(counted(reset.effects), ["first_hop_restarted"]);
  t.true(reset.state.lanes["l0"]!.ledger.edges["h1"]!.covered.isEmpty);
  const back = writerStep(s, { type: "transport.connection", event: "reconnected", nowMs: 1, busy: [] });
  t.deepEqual(of(back.effects, "requestCredit").map((e) => e.holder), ["h1", "h2"]);
  t.deepEqual(of(back.effects, "resend").map((e) => e.holder), ["h2"]);
  t.is(of(back.effects, "publish").length, 1, "progress goes out at once");
});

test("fencing fails every protected sync; stopping fails waiting writes too", (t) => {
  const s = run(fresh(), written(1, [1, 0, 1]), { type: "sync.local", id: 4, durableLsn: 1, contract: "az-loss", target: { l0: 1 }, timeoutMs: 10 }).state;
  const fenced = writerStep(deepFreeze(s), { type: "fence", newTerm: 2 });
  t.deepEqual(counted(fenced.effects), ["fenced"]);
  t.deepEqual(of(fenced.effects, "refuse").map((e) => [e.id, e.refusal.kind]), [[4, "fenced"]]);
  t.is(fenced.state.fencedBy, 2);
  const stopped = writerStep(deepFreeze({ ...s, waiting: [{ id: 5, lba: 0, data: block() }] }), { type: "stop" });
  t.deepEqual(of(stopped.effects, "refuse").map((e) => e.id).sort(), [4, 5]);
  t.true(stopped.state.stopped);
});

test("progress publishes the commit runs once, and a multi-lane volume's newest manifest", (t) => {
  const lanes = [
    { lane: "l0", fromLba: 0, toLba: 1, holders: ["h1"] },
    { lane: "l1", fromLba: 2, toLba: 3, holders: ["h2"] },
  ];
  const s = run(fresh({ lanes }), written(1, [1, 0, 1], [2, 2, 2])).state;
  const p = writerStep(deepFreeze(s), { type: "progress.due", nowMs: 5 });
  t.deepEqual(of(p.effects, "publish").map((e) => e.subject.includes("h1") || e.subject.includes("h2")), [true, true, false]);
  t.deepEqual(counted(p.effects), ["manifest_shipped"]);
  t.deepEqual(p.state.lanes["l0"]!.runs, []);
  const again = writerStep(p.state, { type: "progress.due", nowMs: 6 });
  t.deepEqual(counted(again.effects), [], "an unchanged manifest waits for its repeat interval");
});

test("property: any batches of writes get contiguous sequences, and the cuts seal them all, in order, exactly once", (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.tuple(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 1, max: 4 })), { maxLength: 6 }), {
        maxLength: 8,
      }),
      fc.integer({ min: 1, max: 6 }),
      (batches, unitBlocks) => {
        let s = deepFreeze(fresh({ maxUnitPayloadBytes: unitBlocks * BLOCK }));
        const seals: [number, number][] = [];
        let id = 0;
        let n = 0;
        for (const batch of batches) {
          const writes = batch.map(([lba, blocks]) => {
            const b = Math.min(blocks, 64 - lba);
            n++;
            return { id: ++id, lba, lsn: id, data: block(b) };
          });
          for (const ev of [{ type: "wal.written", nowMs: id, writes } as const, { type: "cut" } as const]) {
            const r = writerStep(s, ev);
            for (const e of of(r.effects, "seal")) seals.push([e.firstSeq, e.lastSeq]);
            s = deepFreeze(r.state);
          }
        }
        let expect = 1;
        for (const [a, b] of seals) {
          if (a !== expect || b < a) return false;
          expect = b + 1;
        }
        return expect === n + 1 && s.lanes["l0"]!.next === n + 1;
      },
    ),
  );
  t.pass();
});

// The receipt batches of one turn reach the machine as ONE `receipts` event.
const receiptsOf = (...batches: WriterEvent[]): WriterEvent => ({
  type: "receipts",
  batches: batches as Extract<WriterEvent, { type: "receipt" | "receipt.invalid" }>[],
});
/** Three retained units (1-2, 3-4, 5-6) and two protected syncs (through 2 and through 6). */
function withWaiters(): WriterState {
  const syncLocal = (id: number, head: number): WriterEvent => ({
    type: "sync.local",
    id,
    durableLsn: id,
    contract: "az-loss",
    target: { l0: head },
    timeoutMs: 500,
  });
  return run(fresh({ retainUntil: "receipted" }, true), sealed(1, 2), sealed(3, 4), sealed(5, 6), syncLocal(9, 2), syncLocal(10, 6)).state;
}

test("the receipt batches of a turn fold as one event, as each would alone; the input is not changed", (t) => {
  const s = deepFreeze(withWaiters());
  const batches = [receipt("h1", 1, 4), receipt("h2", 1, 2), receipt("h2", 1, 6)];
  const one = writerStep(s, receiptsOf(...batches));
  const each = run(s, ...batches);
  t.deepEqual(one.state, each.state);
  const answers = (e: WriterEffect) => e.type === "reply" || e.type === "cancel";
  const expected = [...each.effects.filter((e) => !answers(e)), ...each.effects.filter(answers)];
  t.deepEqual(one.effects, expected, "the same effects; protected syncs are answered once, after the folds");
  t.deepEqual(of(one.effects, "reply").map((r) => r.id), [9, 10]);
  t.is(one.state.lanes["l0"]!.units.size, 1, "h1 has receipted 1-4 only");
  t.deepEqual(of(one.effects, "outboxDrop").map((e) => e.seqs.toString()), ["1-2", "3-4"]);
  t.is(one.state.waiters.length, 0);
});

test("a refused batch inside a turn changes nothing: counted, the batches around it fold", (t) => {
  const s = deepFreeze(run(withWaiters(), receipt("h1", 1, 1, 2)).state);
  const stale = receipt("h1", 1, 6, 1); // an older incarnation of h1: the obligations refuse it
  const invalid: WriterEvent = { type: "receipt.invalid", lane: "l0", code: "bad_signature" };
  const alone = writerStep(s, receiptsOf(stale, invalid));
  t.is(alone.state, s);
  t.deepEqual(counted(alone.effects), ["receipt_stale_incarnation", "receipt_bad_signature"]);
  t.deepEqual(alone.effects.map((e) => e.type), ["count", "count"]);
  const around = writerStep(s, receiptsOf(receipt("h2", 1, 2), stale, invalid, receipt("h2", 3, 4)));
  t.deepEqual(around.state, run(s, receipt("h2", 1, 2), receipt("h2", 3, 4)).state);
  t.deepEqual(counted(around.effects), ["receipt_stale_incarnation", "receipt_bad_signature"]);
  t.true(around.state.lanes["l0"]!.proven["h1"]!.equals(s.lanes["l0"]!.proven["h1"]!));
  const unknownLane = writerStep(s, receiptsOf({ ...receipt("h2", 1, 2), lane: "nope" } as WriterEvent));
  t.is(unknownLane.state, s);
  t.deepEqual(unknownLane.effects, []);
});

test("a fenced writer's state still folds a turn's receipts", (t) => {
  const s = deepFreeze(run(withWaiters(), { type: "fence", newTerm: 2 }).state);
  const r = writerStep(s, receiptsOf(receipt("h1", 1, 6), receipt("h2", 1, 6)));
  t.true(r.state.lanes["l0"]!.retained.isEmpty);
  t.deepEqual(of(r.effects, "receiptFolded").length, 2);
});

test("order law: a turn's batches as one event end in the state their events one by one reach, same effects", (t) => {
  const arrival = fc.oneof(
    fc.record({
      holder: fc.constantFrom("h1", "h2"),
      first: fc.integer({ min: 1, max: 6 }),
      len: fc.integer({ min: 0, max: 5 }),
      incarnation: fc.integer({ min: 1, max: 3 }),
      term: fc.constantFrom(1, 1, 1, 2),
    }).map(({ holder, first, len, incarnation, term }) => receipt(holder, first, Math.min(6, first + len), incarnation, term)),
    fc.constant<WriterEvent>({ type: "receipt.invalid", lane: "l0", code: "bad_signature" }),
  );
  const s0 = deepFreeze(withWaiters());
  fc.assert(
    fc.property(fc.array(fc.array(arrival, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 }), (turns) => {
      let batched = s0;
      const batchedFx: WriterEffect[] = [];
      for (const turn of turns) {
        const r = writerStep(batched, receiptsOf(...turn));
        batchedFx.push(...r.effects);
        batched = deepFreeze(r.state);
      }
      const each = run(s0, ...turns.flat());
      const key = (fx: WriterEffect[]) => fx.map((e) => JSON.stringify(e)).sort();
      t.deepEqual(batched, each.state);
      t.deepEqual(key(batchedFx), key(each.effects));
    }),
  );
});
