import anyTest, { type TestFn } from "ava";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { transportConformance } from "../kit/transport-conformance.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

transportConformance(
  test,
  async (t) => {
    const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "conformance-a" });
    const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "conformance-b" });
    return {
      a,
      b,
      cleanup: async () => {
        await Promise.all([a.close(), b.close()]);
      },
    };
  },
  "nats",
);

test("a throwing handler is reported to onHandlerError and the subscription keeps delivering", async (t) => {
  const errors: string[] = [];
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "throwing-a" });
  const b = await NatsTransport.connect({
    servers: t.context.nats.url,
    name: "throwing-b",
    onHandlerError: (err, msg) => errors.push(`${msg.subject}: ${(err as Error).message}`),
  });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const seen: number[] = [];
  let done!: () => void;
  const second = new Promise<void>((r) => (done = r));
  b.subscribe("throwing.x", (m) => {
    seen.push(m.data[0]!);
    if (m.data[0] === 1) throw new Error("handler bug");
    done();
  });
  await b.flush();
  a.publish("throwing.x", new Uint8Array([1]));
  a.publish("throwing.x", new Uint8Array([2]));
  await second;
  t.deepEqual(seen, [1, 2]);
  t.deepEqual(errors, ["throwing.x: handler bug"]);
});

test("publishing on a subject with a space fails with code 'invalid_subject' and the connection stays usable", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "invalid-subject" });
  t.teardown(() => a.close());
  const err = t.throws(() => a.publish("bad subject", new Uint8Array(1)));
  t.is((err as { code?: string }).code, "invalid_subject");
  await t.notThrowsAsync(a.flush());
});
