import anyTest, { type TestFn } from "ava";
import { systemClock } from "../../core/clock.ts";
import { CreditSender } from "../../actors/hop/index.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { creditSubject } from "../../transport/protocol/subjects.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

test("a grant that cannot be read (nested headers, 1 MiB of junk) is reported to the sender's owner with its error code, which counts it", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "malformed-sender" });
  const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "malformed-attacker" });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const codes: string[] = [];
  const s = new CreditSender({ transport: a, clock: systemClock, sender: "w1", holder: "h1", volume: "v", lane: "l0", onMalformed: (c) => codes.push(c) }).attach();
  t.teardown(() => s.close());
  await a.flush();
  const subject = creditSubject("h1", "v", "l0");
  b.publish(subject, new Uint8Array([0xdc, 0xff, 0xff, 0xdc, 0xff, 0xff]));
  b.publish(subject, new Uint8Array(1 << 20).fill(0xc1));
  await b.flush();
  for (let i = 0; i < 100 && codes.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  t.is(codes.length, 2, `codes: ${codes.join(",")}`);
  t.true(codes.every((c) => c.length > 0));
});
