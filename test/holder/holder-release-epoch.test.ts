import anyTest, { type TestFn } from "ava";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, launchHolder, publishRelease, settle, transport, unit, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Issue #19: with the epoch check in `handleRelease` removed, every earlier test still passed
// (they all publish frontiers at the holder's own epoch). A frontier from an older topology epoch
// was authorized under a membership that no longer holds; acting on it could drop the last copy.
test.serial("a release frontier from an older topology epoch is refused, counted, releases nothing, and the holder keeps serving", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const h = await launchHolder(url, keys, holderConfig("h-epoch", { epoch: 3 }));
  const wt = await transport(url, "writer-and-controller");
  const w = new Writer(wt, "h-epoch");
  const lane = () => h.holder.lane("vol1", "l0")!;
  const rejected = () => h.log.filter((o) => o.type === "rejected" && o.code === "stale_epoch").length;
  try {
    for (let s = 1; s <= 10; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "1-10", "units 1-10 admitted");

    publishRelease(wt, "h-epoch", [[1, 10]], 2);
    publishRelease(wt, "h-epoch", [[1, 10]], 0);
    await eventually(() => rejected() === 2, "both older-epoch frontiers refused as stale_epoch", 5000, () => `rejections: ${JSON.stringify(h.log.filter((o) => o.type === "rejected"))}`);
    await settle();
    t.is(h.holder.counters.get("stale_epoch"), 2, "each refusal is counted");
    t.is(lane().retained.toString(), "1-10", "nothing was released");
    t.true(lane().released.isEmpty, "no range is marked released");
    t.false(h.log.some((o) => o.type === "released"), "no release was observed");

    // The same frontier under the current epoch is honoured, and ingress continues.
    publishRelease(wt, "h-epoch", [[1, 10]], 3);
    await eventually(() => lane().retained.isEmpty, "released under the current epoch");
    t.is(lane().released.toString(), "1-10");
    for (let s = 11; s <= 12; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "11-12", "the holder still admits units");
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});
