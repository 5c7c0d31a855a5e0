/**
 * Repair under failure load on a real multi-region deployment (supercluster, JetStream control
 * log): a timeline's repair must finish before its next allowed failure. The only link into the
 * repair site is configured fast; once a real route probe measures it through a shaped slow link,
 * the controller's status turns that timeline NOT met, naming repair time against the window.
 */
import anyTest, { type TestFn } from "ava";
import type { VolumeStatus } from "../../transport/protocol/wire/volume-status.ts";
import { systemClock } from "../../core/index.ts";
import { shapedByLinks } from "../../actors/runtime/role-links.ts";
import { RouteProber } from "../../actors/runtime/route-prober.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

const TIMELINE = "West, then use1-az1 (repair at s-e3)";
const timelineOf = (s: VolumeStatus | undefined) => s?.scenarios.find((x) => x.name === TIMELINE);
const repairReasons = (s: VolumeStatus | undefined) => (timelineOf(s)?.reasons ?? []).filter((r) => r.startsWith("repair after step"));

test("the controller reports a timeline NOT met once a measured route shows its repair cannot finish before the next allowed failure", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-repair-load", "use-vol-repair-load", {
    controller: { routes: { maxAgeMs: 30_000 } },
    topology: (topo) => ({
      ...topo,
      // s-e3 (where the repair re-makes US-West's copy) is reachable only from s-eu.
      links: topo.links.filter((l) => (l.from !== "s-e3" && l.to !== "s-e3") || l.id === "s-e3-s-eu"),
      timelines: [
        {
          name: TIMELINE,
          // Recovery phases are 10 s; at the configured 125 MB/s the copy itself takes milliseconds.
          minIntervalSec: 15,
          deadlineSec: 1800,
          required: false,
          repair: { site: "s-e3" },
          events: [
            { afterSec: 0, losses: [{ domain: "region:us-west", kind: "site_destruction" }] },
            { afterSec: 15, losses: [{ domain: "az:use1-az1", kind: "site_destruction" }] },
          ],
        },
      ],
    }),
  });
  t.context.defer(() => d.stop());
  for (let i = 0; i < 60; i++) await d.writer.write((i * 7) % BLOCKS, blockData(i));
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  await eventually(() => timelineOf(d.controller.status()) !== undefined && d.controller.status()!.scenarios.length > 0, "a status document with the timeline", 15_000);
  t.deepEqual(repairReasons(d.controller.status()), [], "configured bandwidth: the repair fits the window");

  // A real probe of s-eu -> s-e3 through a link shaped to 20 kB/s.
  const responderBus = await NatsTransport.connect({ servers: d.urls["us-east"]!, name: "probe-e3", maxReconnectAttempts: 0 });
  t.context.defer(() => responderBus.close());
  const responder = new RouteProber({ self: "probe-e3", site: "s-e3", peers: {}, intervalMs: 3_600_000, budgetBytesPerInterval: 0 }, { transport: responderBus, clock: systemClock });
  responder.endpoint.start();
  await responderBus.flush();
  const proberBus = await NatsTransport.connect({ servers: d.urls["eu"]!, name: "probe-eu", maxReconnectAttempts: 0 });
  t.context.defer(() => proberBus.close());
  const sending = shapedByLinks(proberBus, { site: "s-eu", peers: { "probe-e3": { site: "s-e3", latencyMs: 20, bandwidthMBps: 0.02 } } });
  const prober = new RouteProber({ self: "probe-eu", site: "s-eu", peers: { "probe-e3": { site: "s-e3" } }, intervalMs: 1000, budgetBytesPerInterval: 40_000, pings: 2, frameBytes: 4096, timeoutMs: 5000 }, { transport: sending, clock: systemClock });
  prober.start();
  t.teardown(() => {
    prober.stop();
    responder.stop();
  });

  await eventually(() => repairReasons(d.controller.status()).length > 0, "the timeline's repair judged on the measured link", 30_000, () => JSON.stringify(timelineOf(d.controller.status())));
  const tl = timelineOf(d.controller.status())!;
  t.log(repairReasons(d.controller.status())[0]);
  t.is(tl.verdict, "not_met");
  t.regex(repairReasons(d.controller.status())[0]!, /^repair after step 1 takes [\d.]+ s \(.* over .*\/s measured, shared with surviving traffic\), next allowed failure in 15 s$/);
  t.true(d.controller.counters.get("route_measurements") > 0);
});
