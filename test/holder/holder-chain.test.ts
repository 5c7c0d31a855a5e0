import anyTest, { type TestFn } from "ava";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import {
  CountingFileLayer,
  eventually,
  holderConfig,
  KeyRing,
  launchHolder,
  publishRelease,
  tempDir,
  transport,
  unit,
  watchReceipts,
  Writer,
} from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const UNITS = 300;

test.serial("memory-only chain of 3 holders: receive, forward, receipt and release with zero payload writes anywhere", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const files = { a: new CountingFileLayer(), b: new CountingFileLayer(), c: new CountingFileLayer() };
  // The terminal holder could persist (disk capability, flush every 60 s), but release comes first:
  // its unstarted flush is cancelled and the segments are discarded without a single write.
  const c = await launchHolder(url, keys, holderConfig("hc", {
      upstream: ["hb"],
      residency: ["ram", "disk"],
      flush: { intervalMs: 60_000, deadlineMs: 1_000 },
      // Room for the whole stream: no memory pressure, so nothing forces a spill.
      arena: { segmentBytes: 64 * 1024, limitBytes: 8 * 1024 * 1024, maxOutstandingCredit: 256 * 1024, maxUnitBytes: 32 * 1024 },
    }), {
    files: files.c,
    spillPath: `${tempDir()}/spill.log`,
  });
  const b = await launchHolder(url, keys, holderConfig("hb", { upstream: ["ha"], downstream: ["hc"] }), { files: files.b });
  const a = await launchHolder(url, keys, holderConfig("ha", { downstream: ["hb"] }), { files: files.a });
  const wt = await transport(url, "writer");
  const receipts = watchReceipts(wt);
  const w = new Writer(wt, "ha");
  try {
    for (let s = 1; s <= UNITS; s++) w.send(unit(s, 1, 4096));
    await eventually(() => ["ha", "hb", "hc"].every((h) => receipts.byHolder(h).covers(1, UNITS)), "every hop receipted 1..N", 15_000);

    // Nothing is released before the control log authorizes it, even though every edge receipted.
    for (const h of [a, b, c]) t.is(h.holder.lane("vol1", "l0")!.retained.toString(), `1-${UNITS}`);

    for (const h of ["hc", "hb", "ha"]) publishRelease(wt, h, [[1, UNITS]]);
    await eventually(() => [a, b, c].every((h) => h.holder.empty()), "all three released", 10_000, () =>
      JSON.stringify([a, b, c].map((h) => {
        const l = h.holder.lane("vol1", "l0")!;
        return { id: h.holder.id, retained: l.retained.toString(), releasable: l.releasable().toString(), pending: l.edges().map((e) => l.pendingFor(e).toString()), segs: l.arenaReport().segments.sealed, open: l.arenaReport().segments.open, counters: h.holder.counters.snapshot() };
      })),
    );
    // Whole segments went back to the pool: no RAM held, no pins left.
    await eventually(() => [a, b, c].every((h) => h.holder.lane("vol1", "l0")!.arenaReport().ramBytes === 0), "arenas empty", 5_000);
    for (const f of Object.values(files)) {
      t.is(f.writes, 0);
      t.is(f.datasyncs, 0);
    }
    t.is(w.sender.backlog.units, 0);
    t.is(c.holder.lane("vol1", "l0")!.released.toString(), `1-${UNITS}`);
  } finally {
    receipts.stop();
    w.sender.close();
    await wt.close();
    for (const h of [a, b, c]) await h.close();
  }
});
