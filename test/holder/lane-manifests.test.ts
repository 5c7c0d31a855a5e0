import anyTest, { type TestFn } from "ava";
import { KEPT_MANIFESTS_MAX, LaneManifests } from "../../actors/holder/lane-manifests.ts";
import { laneManifestSpec } from "../../transport/protocol/index.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import type { ConsistencyCut } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/wire/index.ts";
import { receiptSubject, unitSubject } from "../../transport/protocol/subjects.ts";
import { SENDER_HEADER } from "../../transport/unit-frames.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, publishRelease, settle, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const m = (lsn: number, mine: number, other = 1, term = 1) => ({ lsn, term, cut: [[LANE, mine], ["l1", other]] as [string, number][] });

test("a holder lane keeps at most the bound of manifests, always the oldest and the newest, thinning the most closely spaced", (t) => {
  const kept = new LaneManifests(LANE);
  for (let i = 1; i <= 3 * KEPT_MANIFESTS_MAX; i++) kept.add(m(i * (i % 7 === 0 ? 10 : 1), i));
  const lsns = kept.entries().map((k) => k.lsn);
  t.is(lsns.length, KEPT_MANIFESTS_MAX);
  t.is(lsns[0], 1);
  t.is(lsns[lsns.length - 1], Math.max(...Array.from({ length: 3 * KEPT_MANIFESTS_MAX }, (_, j) => (j + 1) * ((j + 1) % 7 === 0 ? 10 : 1))));
  t.deepEqual(lsns, [...lsns].sort((a, b) => a - b), "ordered by LSN");
  t.false(kept.add({ lsn: 5000, term: 1, cut: [["l1", 3], ["l2", 4]] }), "a manifest not naming this lane is not kept");
});

test("a manifest goes with its lane sequence: released or in a hole below the retained range it is forgotten; ahead of the range it waits for its units", (t) => {
  const kept = new LaneManifests(LANE);
  for (const [lsn, seq] of [[1, 3], [2, 5], [3, 8], [4, 12]] as const) kept.add(m(lsn, seq));
  kept.prune(RangeSet.from([[5, 6], [8, 10]]));
  t.deepEqual(kept.entries().map((k) => k.seq), [5, 8, 12], "3 was released, 12 has not arrived yet");
  kept.prune(RangeSet.of(9, 12));
  t.deepEqual(kept.entries().map((k) => k.seq), [12]);
  t.deepEqual(kept.cutsWithin(VOLUME, RangeSet.of(9, 11)), [], "a receipt lists only manifests within its own ranges");
  t.deepEqual(kept.cutsWithin(VOLUME, RangeSet.of(9, 12)), [{ volume: VOLUME, lane: LANE, throughSeq: 12 }, { volume: VOLUME, lane: "l1", throughSeq: 1 }]);
});

test("a receipt lists kept manifests newest first, each as a run of its lanes in ascending order, never more than 256 members", (t) => {
  const kept = new LaneManifests(LANE);
  for (let i = 1; i <= KEPT_MANIFESTS_MAX; i++) kept.add({ lsn: i, term: 1, cut: [["a0", i], ["a1", i], ["a2", i], [LANE, i], ["m0", i]] });
  const cuts = kept.cutsWithin(VOLUME, RangeSet.of(1, KEPT_MANIFESTS_MAX));
  t.is(cuts.length, 255, "51 manifests of 5 lanes fit, a 52nd would not");
  t.deepEqual(cuts.slice(0, 5).map((c) => [c.lane, c.throughSeq]), [["a0", 64], ["a1", 64], ["a2", 64], [LANE, 64], ["m0", 64]]);
});

/** Every consistency cut a holder's receipts on the lane listed, latest batch per holder. */
function watchCuts(t: Awaited<ReturnType<typeof transport>>): Map<string, ConsistencyCut[]> {
  const latest = new Map<string, ConsistencyCut[]>();
  t.subscribe(receiptSubject(VOLUME, LANE), (msg) => {
    const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, msg.data).body);
    latest.set(b.holder.holderId, b.receipts.flatMap((r) => [...r.payload.manifest.consistencyCuts]));
  });
  return latest;
}

test.serial("on real NATS a manifest from the writer is kept beside the range, forwarded down the chain and listed in both holders' receipts; one from an unknown sender or an older writer term changes nothing", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const b = await launchHolder(url, keys, holderConfig("mb", { upstream: ["ma"] }));
  t.teardown(() => b.close());
  const a = await launchHolder(url, keys, holderConfig("ma", { downstream: ["mb"] }));
  t.teardown(() => a.close());
  const wt = await transport(url, "w1");
  t.teardown(() => wt.close());
  const cuts = watchCuts(wt);
  const w = new Writer(wt, "ma");
  for (let s = 1; s <= 5; s++) w.send(unit(s, 1, 1024, 2));
  const send = (from: string, term: number, lsn: number, seq: number) =>
    wt.publish(unitSubject("ma", VOLUME, LANE), encodeMessage(laneManifestSpec, { writer: "w1", volume: VOLUME, term, lsn, cut: [["l0", seq], ["l1", 3]] }), { headers: { [SENDER_HEADER]: from } });
  send("w1", 2, 40, 5);
  const listed = [{ volume: VOLUME, lane: "l0", throughSeq: 5 }, { volume: VOLUME, lane: "l1", throughSeq: 3 }];
  await eventually(() => ["ma", "mb"].every((h) => JSON.stringify(cuts.get(h)) === JSON.stringify(listed)), "both holders list the manifest", 5000, () => JSON.stringify([...cuts]));

  send("intruder", 2, 41, 5);
  send("w1", 1, 42, 5);
  await eventually(() => a.holder.counters.get("manifest_stale_term") === 1, "the older term's manifest is refused");
  await settle(100);
  t.deepEqual(a.holder.lane(VOLUME, LANE)!.manifests().map((k) => k.lsn), [40]);
  t.is(b.holder.lane(VOLUME, LANE)!.manifests().length, 1);

  // Released with the range: the manifest goes too, and the next receipt lists none.
  for (const h of ["mb", "ma"]) publishRelease(wt, h, [[1, 5]]);
  await eventually(() => a.holder.lane(VOLUME, LANE)!.retained.isEmpty, "ma released 1-5");
  w.send(unit(6, 1, 1024, 2));
  await eventually(() => cuts.get("ma")?.length === 0, "ma's receipt no longer lists it", 5000, () => JSON.stringify(cuts.get("ma")));
  t.is(a.holder.lane(VOLUME, LANE)!.manifests().length, 0);
});
