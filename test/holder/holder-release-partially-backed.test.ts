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

// Rule (issue #46, item 7): a release frontier for 1-10 that arrives after the holder has already
// folded a log release of only 1-5 releases exactly 1-5 and counts `release_unverified` for the
// rest. holder-release-verified.test.ts sends its frontiers before the holder folds the log, so
// they all take the catch-up path; here the log the holder holds backs part of the frontier at
// once, which is where believing "some of it is backed" as "all of it is" would slip through.
test.serial("release_unverified: a frontier for 1-10 after the holder folded a log release of 1-5 releases 1-5 only, and counts the rest", async (t) => {
  const url = t.context.nats.url;
  const ct = await transport(url, "controller");
  const { log: store } = await initJetStreamControlLog(ct.connection, { region: "rp" });
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
    for (let s = 1; s <= 5; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "1-5", "units 1-5 admitted");

    await commitControlEvent(store, ctl, who("ctl-a"), () => release("h1", 1, 5, ["h2"], "vol1-l0"));
    // The holder's peer directory folds the log (what its own refresh timer would do in time).
    await peers.refresh();
    t.is(peers.releasedAt("vol1-l0", "h1").toString(), "1-5", "the holder has folded the release of 1-5");

    publishRelease(wt, "h1", [[1, 10]], 1);
    await eventually(() => unverified() === 1, "the unbacked part of the frontier refused as release_unverified");
    await eventually(() => lane().released.toString() === "1-5" && lane().retained.isEmpty, "1-5 released", 5000, () => lane().released.toString());

    // 6-10 arrive after the frontier: the part of it the log never held authorized nothing.
    for (let s = 6; s <= 10; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "6-10", "units 6-10 admitted");
    await settle();
    t.is(lane().retained.toString(), "6-10", "what the log does not hold is kept");
    t.true(lane().releasable().isEmpty, "nothing beyond 1-5 was authorized");
    t.is(lane().released.toString(), "1-5", "exactly what the log backs was released");
    t.is(unverified(), 1);
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
    await ct.close();
  }
});
