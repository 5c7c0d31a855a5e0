import anyTest, { type TestFn } from "ava";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { withNatsServer, type NatsTestContext } from "../helpers/nats-test-context.ts";
import { transportConformance } from "../helpers/transport-conformance.ts";

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
