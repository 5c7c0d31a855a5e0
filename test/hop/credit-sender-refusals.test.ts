import anyTest, { type TestFn } from "ava";
import { systemClock } from "../../core/clock.ts";
import { CreditSender, GrantRefusal } from "../../actors/hop/index.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { creditSubject } from "../../transport/protocol/subjects.ts";
import { creditSpec, encodeMessage, type WireCredit } from "../../transport/protocol/index.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Issue #46 (item 6): with a holder's NATS credentials, a grant from a made-up incarnation
// 2^53-1 started the writer's window over under it, and every real grant of the holder's admitted
// incarnation looked stale from then on: the writer never sent that holder anything again. Grants
// naming another holder, volume or lane than their subject were dropped without a count.
test("a grant from an incarnation the log has not admitted, or naming another holder, volume or lane than its subject, is refused and counted; the window stays the admitted one's", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "refusing-sender" });
  const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "holder-credentials" });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const refused: string[] = [];
  let admitted = 3;
  const s = new CreditSender({ transport: a, clock: systemClock, sender: "w1", holder: "h1", volume: "v", lane: "l0", session: 1, believes: (inc) => inc <= admitted, onRefused: (c) => refused.push(c) }).attach();
  t.teardown(() => s.close());
  await a.flush();
  const subject = creditSubject("h1", "v", "l0");
  const grant = (over: Partial<WireCredit> = {}) =>
    b.publish(subject, encodeMessage(creditSpec, { holder: "h1", sender: "w1", volume: "v", lane: "l0", incarnation: 3, session: 1, window: 1, grantedThrough: 4096, grantSeq: 1, ...over }));
  const settled = async (n: number) => {
    await b.flush();
    for (let i = 0; i < 100 && refused.length < n; i++) await new Promise((r) => setTimeout(r, 20));
  };

  grant();
  for (let i = 0; i < 100 && s.state.grantedThrough < 4096; i++) await new Promise((r) => setTimeout(r, 20));
  t.deepEqual(s.creditWindow, { incarnation: 3, window: 1 });

  grant({ incarnation: Number.MAX_SAFE_INTEGER, grantedThrough: Number.MAX_SAFE_INTEGER, grantSeq: 2 });
  grant({ holder: "h2", grantSeq: 3 });
  grant({ volume: "v9", grantSeq: 4 });
  grant({ lane: "l9", grantSeq: 5 });
  grant({ sender: "h0", grantSeq: 6 }); // another sender's grant on the same subject: not ours, not wrong
  await settled(4);
  t.deepEqual(refused, [GrantRefusal.unadmittedIncarnation, GrantRefusal.wrongSubject, GrantRefusal.wrongSubject, GrantRefusal.wrongSubject]);
  t.deepEqual(s.creditWindow, { incarnation: 3, window: 1 }, "the window is still the admitted incarnation's");
  t.is(s.state.grantedThrough, 4096);

  // The admitted incarnation's grants keep counting; a restart counts once the log admitted it.
  grant({ grantedThrough: 8192, grantSeq: 7 });
  for (let i = 0; i < 100 && s.state.grantedThrough < 8192; i++) await new Promise((r) => setTimeout(r, 20));
  t.is(s.state.grantedThrough, 8192);
  admitted = 4;
  grant({ incarnation: 4, grantedThrough: 1024, grantSeq: 1 });
  for (let i = 0; i < 100 && s.creditWindow.incarnation !== 4; i++) await new Promise((r) => setTimeout(r, 20));
  t.deepEqual(s.creditWindow, { incarnation: 4, window: 1 });
  t.is(refused.length, 4);
});
