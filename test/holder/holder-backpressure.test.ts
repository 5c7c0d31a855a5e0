import anyTest, { type TestFn } from "ava";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, launchHolder, publishRelease, settle, transport, unit, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const UNITS = 120;
const BYTES = 8 * 1024;

test.serial("a full arena withholds credits: the sender blocks with its units queued, nothing is dropped, and flow resumes after release", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  // 4 segments of 64 KiB (one kept back for manifests): far less than the 960 KiB the writer has.
  const h = await launchHolder(url, keys, holderConfig("h-full", { arena: { segmentBytes: 64 * 1024, limitBytes: 256 * 1024, maxOutstandingCredit: 64 * 1024, maxUnitBytes: 16 * 1024 } }));
  const wt = await transport(url, "writer");
  const w = new Writer(wt, "h-full");
  const lane = () => h.holder.lane("vol1", "l0")!;
  try {
    for (let s = 1; s <= UNITS; s++) w.send(unit(s, 1, BYTES));
    await eventually(() => w.sender.backlog.units > 0 && lane().creditsWithheld() > 0, "sender blocked by withheld credits");
    await settle(200);
    const admitted = lane().retained;
    const cap = lane().arenaReport().capacityBytes;
    t.true(admitted.count < UNITS, "the holder did not take more than it has room for");
    t.true(admitted.count * BYTES <= cap, `admitted ${admitted.count * BYTES} bytes within capacity ${cap}`);
    t.is(admitted.toString(), `1-${admitted.count}`, "admission is a contiguous prefix: nothing was skipped");
    t.is(w.sender.backlog.units + admitted.count, UNITS, "every unit not admitted is still queued at the sender");
    t.is(h.holder.counters.get("credit_exceeded"), 0);
    t.true(w.sender.state.sentThrough <= w.sender.state.grantedThrough);

    // The controller releases what is retained, step by step; every unit eventually gets through.
    await eventually(
      () => {
        const r = lane().retained;
        if (!r.isEmpty) publishRelease(wt, "h-full", r.toJSON());
        return lane().released.union(lane().retained).covers(1, UNITS);
      },
      "every unit admitted after releases",
      15_000,
    );
    t.is(w.sender.backlog.units, 0);
    t.is(lane().released.union(lane().retained).count, UNITS);
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});

test.serial("under a trickle a RAM holder fills its segments before sealing them: arena utilization stays at least half", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const h = await launchHolder(url, keys, holderConfig("h-trickle", { arena: { segmentBytes: 64 * 1024, limitBytes: 4 * 1024 * 1024, maxOpenDelayMs: 10, maxUnitBytes: 16 * 1024 } }));
  const wt = await transport(url, "writer-trickle");
  const w = new Writer(wt, "h-trickle");
  const lane = () => h.holder.lane("vol1", "l0")!;
  try {
    // One 4 KiB unit every 15 ms: longer than the open delay, so a timer seal per unit would
    // leave every segment with one unit in it.
    for (let s = 1; s <= 120; s++) {
      w.send(unit(s, 1, 4096));
      await settle(15);
    }
    await eventually(() => lane().retained.covers(1, 120), "1-120 admitted");
    const r = lane().arenaReport();
    const utilization = r.ramStoredBytes / r.ramBytes;
    t.true(utilization >= 0.5, `utilization ${utilization.toFixed(2)} (${r.ramStoredBytes} of ${r.ramBytes} bytes in ${r.segments.sealed + r.segments.open} segments)`);
    t.log(`arena utilization under a trickle: ${(utilization * 100).toFixed(0)}% (${r.segments.sealed} sealed + ${r.segments.open} open segments of 64 KiB)`);
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await h.close();
  }
});
