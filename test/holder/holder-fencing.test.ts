/**
 * A holder fenced by a newer incarnation of its own identity (issue #46): once its peer directory
 * (the control log) names a higher incarnation, it stops serving — no receipt, credit or admission
 * after it — hands everything it retains to the newer incarnation as transfer offers on its own
 * transfer subject, and retires with `fencedBy` set. The newer incarnation, started empty, ends up
 * holding what only the older one had: nobody re-sends.
 */
import anyTest, { type TestFn } from "ava";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { decodeMessage } from "../../transport/protocol/wire/index.ts";
import { receiptSubject } from "../../transport/protocol/subjects.ts";
import { HANDOVER_RETRY_MS, HANDOVER_ROUNDS } from "../../actors/holder/holder-handover.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const UNITS = 40;

test.serial("a holder fenced by its newer incarnation stops serving, hands what it retains to it, and retires with fencedBy", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const old = await launchHolder(url, keys, holderConfig("h2", { incarnation: 1 }));
  t.teardown(() => old.close());
  const watcher = await transport(url, "watcher");
  t.teardown(() => watcher.close());
  const receiptsOf = new Map<number, number>();
  watcher.subscribe(receiptSubject(VOLUME, LANE), (m) => {
    const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m.data).body);
    receiptsOf.set(b.holder.incarnation, (receiptsOf.get(b.holder.incarnation) ?? 0) + 1);
  });
  await watcher.flush();
  const wt = await transport(url, "w1");
  t.teardown(() => wt.close());
  const w = new Writer(wt, "h2");
  for (let i = 1; i <= UNITS; i++) w.send(unit(i));
  const lane = (h: typeof old) => h.holder.lane(VOLUME, LANE)!;
  await eventually(() => lane(old).retained.covers(1, UNITS), `h2#1 holds 1-${UNITS}`);
  await eventually(() => (receiptsOf.get(1) ?? 0) > 0, "h2#1 receipted");
  w.sender.close(); // the writer sends nothing more, and never again what it sent

  // The control log admits h2#2 (started elsewhere, empty): h2#1 learns it from its peer directory.
  keys.add("h2", 2);
  const newer = await launchHolder(url, keys, holderConfig("h2", { incarnation: 2 }));
  t.teardown(() => newer.close());
  await eventually(() => old.holder.fencedBy() === 2 && old.holder.actor.getSnapshot().status === "done", "h2#1 is fenced by #2 and done");
  t.is(old.holder.state(), "retired");
  t.is(old.holder.counters.get("fenced"), 1);
  t.like(old.holder.handover(), { offeredUnits: UNITS, unconfirmedSeqs: 0 }, "everything offered once, and confirmed by h2#2's receipts");
  const receiptsWhenFenced = receiptsOf.get(1);

  await eventually(() => lane(newer).retained.covers(1, UNITS), `h2#2 holds 1-${UNITS} from the handover`, 5_000, () => JSON.stringify(newer.holder.counters.snapshot()));
  await eventually(() => (receiptsOf.get(2) ?? 0) > 0, "h2#2 receipts them under its own incarnation");
  t.is(newer.holder.fencedBy(), undefined);
  t.is(newer.holder.state(), "serving");
  t.is(receiptsOf.get(1), receiptsWhenFenced, "no receipt of h2#1 after it was fenced");
});

test.serial("a fenced holder whose newer incarnation never receipts offers again each round and reports what stayed unconfirmed", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const old = await launchHolder(url, keys, holderConfig("h3", { incarnation: 1 }));
  t.teardown(() => old.close());
  const wt = await transport(url, "w1");
  t.teardown(() => wt.close());
  const w = new Writer(wt, "h3");
  for (let i = 1; i <= 10; i++) w.send(unit(i));
  await eventually(() => old.holder.lane(VOLUME, LANE)!.retained.covers(1, 10), "h3#1 holds 1-10");
  w.sender.close();
  // The log admits h3#2, which never comes up: nobody takes the offers.
  keys.add("h3", 2);
  await eventually(() => old.holder.actor.getSnapshot().status === "done", "h3#1 is done", 5_000 + HANDOVER_ROUNDS * HANDOVER_RETRY_MS * 2);
  t.is(old.holder.fencedBy(), 2);
  t.deepEqual(old.holder.handover(), { offeredUnits: 10 * HANDOVER_ROUNDS, unconfirmedSeqs: 10 });
  t.is(old.holder.counters.get("handover_unconfirmed_seqs"), 10);
});
