import anyTest, { type TestFn } from "ava";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { systemClock } from "../../core/clock.ts";
import { HolderStartError, startHolder } from "../../actors/holder/holder.ts";
import { HolderConfigError } from "../../actors/holder/holder-config.ts";
import { eventually, holderConfig, KeyRing, launchHolder, publishRelease, settle, transport, unit, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

test.serial("a draining holder promises no new credit, keeps its custody until released, then retires", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const h = await launchHolder(url, keys, holderConfig("h-drain", { arena: { segmentBytes: 64 * 1024, limitBytes: 1024 * 1024, maxOutstandingCredit: 16 * 1024, maxUnitBytes: 8 * 1024 } }));
  const wt = await transport(url, "writer");
  const w = new Writer(wt, "h-drain");
  try {
    for (let s = 1; s <= 5; s++) w.send(unit(s));
    await eventually(() => h.holder.lane("vol1", "l0")!.retained.covers(1, 5), "1-5 admitted");
    t.is(h.holder.state(), "serving");
    h.holder.drain();
    t.is(h.holder.state(), "draining");
    const granted = w.sender.state.grantedThrough;
    for (let s = 6; s <= 40; s++) w.send(unit(s));
    await settle(200);
    t.is(w.sender.state.grantedThrough, granted, "no new credit while draining");
    t.true(w.sender.backlog.units > 0, "the sender holds what could not be sent");
    t.is(h.holder.state(), "draining", "custody still held: not retired");
    const retained = h.holder.lane("vol1", "l0")!.retained;
    publishRelease(wt, "h-drain", retained.toJSON());
    await eventually(() => h.holder.state() === "retired", "retired after release");
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});

test.serial("a holder that cannot open its spill stream fails to start with a typed error; a bad config is refused before starting", async (t) => {
  const keys = new KeyRing();
  keys.add("h-bad");
  const wt = await transport(t.context.nats.url, "h-bad");
  try {
    const err = await t.throwsAsync(
      startHolder(holderConfig("h-bad", { residency: ["disk"], flush: { intervalMs: 10, deadlineMs: 10 } }), {
        transport: wt,
        clock: systemClock,
        privateKey: keys.privateKey("h-bad"),
        peers: keys,
      }),
      { instanceOf: HolderStartError },
    );
    t.is(err?.code, "holder_start_failed");
    await t.throwsAsync(startHolder(holderConfig("h.bad"), { transport: wt, clock: systemClock, privateKey: keys.privateKey("h-bad"), peers: keys }), {
      instanceOf: HolderConfigError,
    });
  } finally {
    await wt.close();
  }
});
