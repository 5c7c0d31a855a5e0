/**
 * A nats-server restart in the middle of a write stream (SIGTERM, then SIGKILL) strands nothing:
 * the actors notice the disconnect, and after the reconnect the senders re-send what was lost
 * (gap repair), so both first hops end up holding every write and a protected sync succeeds.
 * Before, one restart left both holders with `1-499,630-1500` for good. The test only writes,
 * restarts the server and waits.
 */
import anyTest, { type TestFn } from "ava";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { startNatsServer, type NatsServerHandle } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, KeyRing, launchHolder, launchWriter, site } from "./e2e-fixture.ts";

const test = anyTest.serial as TestFn;
const VOLUME = "vol-bus";
const LANE = "l0";
const SITES = { "s-w": site("s-w", "r1", "az1"), "s-a": site("s-a", "r1", "az2"), "s-b": site("s-b", "r1", "az3") };
const WRITES = 1_500;

for (const kill of [false, true]) {
  test(`a nats-server ${kill ? "SIGKILL" : "SIGTERM"} restart mid-stream strands nothing: both holders get every write and sync("az-loss") succeeds`, async (t) => {
    const server: NatsServerHandle = await startNatsServer();
    t.teardown(() => server.stop());
    const keys = new KeyRing();
    const authority = new KeyAuthority("ka", "s-a");
    const holders = await Promise.all(
      (["h-a", "h-b"] as const).map((id) => launchHolder(server.url, keys, e2eHolderConfig(id, SITES[id === "h-a" ? "s-a" : "s-b"], VOLUME, [{ lane: LANE, upstream: ["w1"] }], { resendAfterMs: 300 }))),
    );
    t.teardown(async () => {
      for (const h of holders) await h.close().catch(() => undefined);
    });
    const rig = await launchWriter({
      url: server.url,
      writerId: "w1",
      volume: VOLUME,
      blockCount: 256,
      lanes: [{ lane: LANE, fromLba: 0, toLba: 255, holders: ["h-a", "h-b"] }],
      contracts: [{ name: "az-loss", losses: ["az:az1"], copies: 2 }],
      sites: { "h-a": SITES["s-a"], "h-b": SITES["s-b"] },
      keys,
      authority,
    });
    t.teardown(() => rig.close().catch(() => undefined));
    let restarted: Promise<void> | undefined;
    for (let i = 1; i <= WRITES; i++) {
      await rig.write(i % 256, blockData(i));
      if (i % 100 === 0) await rig.writer.sync();
      if (i === 500) restarted = server.restart({ kill });
    }
    await restarted;
    const { heads } = await rig.writer.sync("az-loss", 60_000);
    t.is(heads[LANE], WRITES);
    for (const h of holders) {
      await eventually(() => h.holder.lane(VOLUME, LANE)!.retained.covers(1, WRITES), `${h.holder.id} holds 1-${WRITES}`, 30_000);
      t.is(h.holder.lane(VOLUME, LANE)!.retained.toString(), RangeSet.of(1, WRITES).toString());
      t.true(h.holder.counters.get("connection_reconnected") >= 1, `${h.holder.id} saw the reconnect`);
    }
    t.true(rig.writer.counters.get("connection_reconnected") >= 1);
    t.log(`writer retransmits ${rig.writer.counters.get("retransmit")}, holder credit refusals ${holders.map((h) => h.holder.counters.get("stale_credit_window")).join("/")}`);
  });
}
