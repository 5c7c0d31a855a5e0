import test from "ava";
import { custodyDeploymentOf, writerIdOf } from "../../tools/demo/custody-deployment.ts";
import { loadDeployment } from "../../tools/demo/deployment.ts";
import { planDeployment } from "../../policies/deploy/deployment-plan.ts";
import { parseDeployment } from "../../policies/deploy/deployment-check.ts";

const example = loadDeployment(new URL("../../examples/deployment.json", import.meta.url).pathname);
const ports = Object.fromEntries(example.regions.map((r, i) => [r.name, { port: 5000 + i, httpPort: 6000 + i, clusterPort: 7000 + i, gatewayPort: 8000 + i }]));

test("the example deployment becomes a deployment custody init accepts: one writer and one controller per volume, the comparison volume's path without the waypoint", (t) => {
  const d = parseDeployment(custodyDeploymentOf(example, "/runs/r1", ports));
  t.is(d.security, "tls-nkeys", "secured, as custody init writes any deployment by default");
  t.deepEqual(d.volumes.map((v) => `${v.id}:${v.writer.id}`), ["vol-demo:w1-vol-demo", "vol-direct:w1-vol-direct"]);
  t.deepEqual(d.controllers.map((c) => `${c.id}@${c.region}`), ["ctl-eu-vol-demo@eu-central", "ctl-eu-vol-direct@eu-central"]);
  const lanesOf = (h: string) => d.holders.find((x) => x.id === h)!.lanes.map((l) => `${l.volume}<${l.upstream.join("+")}>${l.downstream.join("+")}`);
  t.deepEqual(lanesOf("h-wp"), ["vol-demo<w1-vol-demo>h-eu"], "the waypoint is on the first volume's path only");
  t.deepEqual(lanesOf("h-eu"), ["vol-demo<h-wp>", "vol-direct<w1-vol-direct>"], "without the waypoint Europe hears from the writer directly");
  t.deepEqual(d.volumes[1]!.lanes![0]!.firstHops, ["h-e1", "h-e2", "h-eu", "h-usw"]);
  t.deepEqual(d.volumes[0]!.genesisBases, ["h-eu", "h-usw"]);
  t.deepEqual(d.volumes[0]!.releasable, ["h-e1", "h-e2"]);
  t.deepEqual(d.volumes[0]!.writer.workload, { intervalMs: 0, ratePerSec: 50, inFlight: 8, blocksPerWrite: 16, ackLog: "/runs/r1/acks/vol-demo.jsonl" });
  t.deepEqual(d.volumes[0]!.scenarios!.map((s) => s.name), ["AZ use1-az1 lost", "us-east lost", "us-east and us-west lost"]);
  t.is(d.volumes[0]!.timelines![0]!.name, "us-east, then us-west during replay");
});

test("custody init's plan of the example gives the writers and holders the demo's edges as links and every role a span file in the run folder", (t) => {
  const d = parseDeployment(custodyDeploymentOf(example, "/runs/r1", ports, false));
  let n = 0;
  const plan = planDeployment(d, "/runs/r1/deployment", { holderKey: () => ({ pkcs8: new Uint8Array([++n]), publicRaw: new Uint8Array(32).fill(n) }), dataKey: () => new Uint8Array(32) });
  const config = (instance: string) => JSON.parse(plan.files.find((f) => f.path === `/runs/r1/deployment/roles/${instance}/config.json`)!.contents as string) as Record<string, any>;
  const writer = config(`writer-${writerIdOf(example, "vol-demo")}`);
  t.deepEqual(Object.keys(writer["links"].peers).sort(), ["h-e1", "h-e2", "h-eu", "h-usw", "h-wp"]);
  t.like(writer["links"].peers["h-wp"], { site: "s-wp", latencyMs: 6, jitterMs: 1, bandwidthMBps: 100 });
  t.like(config("holder-h-wp")["links"].peers["h-eu"], { site: "s-eu", latencyMs: 40, bandwidthMBps: 0.5 });
  t.is(writer["spanFile"], "/runs/r1/spans/w1-vol-demo.jsonl");
  t.is(config("controller-ctl-eu-vol-demo")["spanFile"], "/runs/r1/spans/ctl-eu-vol-demo.jsonl");
  t.is(config("holder-h-e1")["drainDeadlineMs"], 0);
});
