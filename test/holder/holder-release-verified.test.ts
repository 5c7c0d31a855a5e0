import anyTest, { type TestFn } from "ava";
import { systemClock } from "../../core/clock.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { ControlLogPeers } from "../../custody/control-peers.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { admit, createOb, release, who } from "../custody/control-fixtures.ts";
import { eventually, holderConfig, KeyRing, launchHolder, publishRelease, settle, transport, unit, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Issue #19: an anonymous publish of a release frontier made a holder drop 1-20. A holder whose
// peer directory follows the control log now believes a frontier only as far as the log backs it.
test.serial("a forged release frontier releases nothing: the holder catches up with the control log and refuses what it does not hold as release_unverified", async (t) => {
  const url = t.context.nats.url;
  const ct = await transport(url, "controller");
  const { log: store } = await initJetStreamControlLog(ct.connection, { region: "rv" });
  const ctl = new ControlLogFollower(store);
  for (const b of [admit("h1"), admit("h2"), createOb("vol1-l0", ["h1", "h2"])]) await commitControlEvent(store, ctl, who("ctl-a"), () => b);
  const peers = new ControlLogPeers(new ControlLogFollower(store), systemClock, 1_000);
  await peers.refresh();
  const h = await launchHolder(url, new KeyRing(), holderConfig("h1"), { peers });
  const wt = await transport(url, "writer-and-attacker");
  const w = new Writer(wt, "h1");
  const lane = () => h.holder.lane("vol1", "l0")!;
  const unverified = () => h.holder.counters.get("release_unverified");
  try {
    for (let s = 1; s <= 10; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "1-10", "units 1-10 admitted");

    // The attacker: any connection may publish on the release subject.
    publishRelease(wt, "h1", [[1, 10]], 1);
    await eventually(() => unverified() === 1, "the forged frontier refused after catching up with the log");
    await settle();
    t.is(lane().retained.toString(), "1-10", "nothing released");
    t.true(lane().released.isEmpty);

    // The log releases 1-5 at h1 (relying on h2); a frontier claiming 1-10 authorizes exactly 1-5.
    await commitControlEvent(store, ctl, who("ctl-a"), () => release("h1", 1, 5, ["h2"], "vol1-l0"));
    publishRelease(wt, "h1", [[1, 10]], 1);
    await eventually(() => unverified() === 2 && lane().releasable().toString() === "1-5", "only what the log backs is authorized", 5000, () => lane().releasable().toString());
    // Whole segments only: 1-10 share one, so nothing goes until the log releases the rest of it.
    t.is(lane().retained.toString(), "1-10");
    await commitControlEvent(store, ctl, who("ctl-a"), () => release("h1", 6, 10, ["h2"], "vol1-l0"));
    publishRelease(wt, "h1", [[1, 10]], 1);
    await eventually(() => lane().retained.isEmpty, "released once the log backs all of it", 5000, () => lane().retained.toString());
    t.is(lane().released.toString(), "1-10");
    t.is(unverified(), 2);
    for (let s = 11; s <= 12; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "11-12", "the holder keeps serving");
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
    await ct.close();
  }
});
