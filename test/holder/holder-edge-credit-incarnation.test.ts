import anyTest, { type TestFn } from "ava";
import { creditSpec, creditSubject, encodeMessage } from "../../transport/protocol/index.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, settle, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Issue #46 (item 6): with a downstream holder's NATS credentials, a credit grant from a made-up
// incarnation 2^53-1 started the upstream holder's window over under it; every real grant of the
// edge's admitted incarnation then looked stale, and nothing was forwarded to that edge again.
test.serial("a credit grant from an edge incarnation the log has not admitted is refused and counted; forwarding to the edge goes on", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const b = await launchHolder(url, keys, holderConfig("h-b", { upstream: ["h-a"] }));
  const a = await launchHolder(url, keys, holderConfig("h-a", { downstream: ["h-b"] }));
  const wt = await transport(url, "writer-and-edge-credentials");
  const w = new Writer(wt, "h-a");
  const atEdge = () => b.holder.lane(VOLUME, LANE)!.retained.toString();
  try {
    for (let s = 1; s <= 5; s++) w.send(unit(s));
    await eventually(() => atEdge() === "1-5", "1-5 forwarded to h-b", 5000, atEdge);

    wt.publish(creditSubject("h-b", VOLUME, LANE), encodeMessage(creditSpec, { holder: "h-b", sender: "h-a", volume: VOLUME, lane: LANE, incarnation: Number.MAX_SAFE_INTEGER, session: 1, window: 1, grantedThrough: Number.MAX_SAFE_INTEGER, grantSeq: 1 }));
    wt.publish(creditSubject("h-b", VOLUME, LANE), encodeMessage(creditSpec, { holder: "h-x", sender: "h-a", volume: VOLUME, lane: LANE, incarnation: 1, session: 1, window: 1, grantedThrough: 1, grantSeq: 1 }));
    await settle();
    for (let s = 6; s <= 10; s++) w.send(unit(s));
    await eventually(() => atEdge() === "1-10", "6-10 forwarded to h-b as before", 5000, atEdge);
    t.is(a.holder.counters.get("edge_credit_unadmitted_incarnation"), 1);
    t.is(a.holder.counters.get("edge_credit_wrong_subject"), 1);
    t.is(a.holder.counters.get("edge_restarted"), 0, "the edge was not taken for restarted");
  } finally {
    w.sender.close();
    await wt.close();
    await a.close();
    await b.close();
  }
});
