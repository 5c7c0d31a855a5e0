/**
 * A holder checks its metrics port before it starts (actors/runtime/metrics-port-check.ts): a second copy
 * on the same machine fails with a typed error before it could ask to be admitted.
 */
import test from "ava";
import { createServer, type AddressInfo } from "node:net";
import { checkMetricsPortFree, MetricsPortInUseError } from "../../actors/runtime/metrics-port-check.ts";

test("a taken metrics port is metrics_port_in_use; a free one passes and stays free", async (t) => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen({ host: "127.0.0.1", port: 0 }, () => r()));
  const port = (taken.address() as AddressInfo).port;
  const err = await t.throwsAsync(checkMetricsPortFree({ host: "127.0.0.1", port }), { instanceOf: MetricsPortInUseError });
  t.is(err?.code, "metrics_port_in_use");
  await new Promise<void>((r) => taken.close(() => r()));
  await checkMetricsPortFree({ host: "127.0.0.1", port });
  // The check let go of the port: a server can take it at once.
  const again = createServer();
  await new Promise<void>((r) => again.listen({ host: "127.0.0.1", port }, () => r()));
  await new Promise<void>((r) => again.close(() => r()));
  await t.notThrowsAsync(checkMetricsPortFree({}));
});
