/**
 * Where `custody init` puts the control log: with 3 regions or more, a cluster of its own with one
 * server in each of three regions (routes between them, gateways to every region, secured like the
 * regions' servers) and a bootstrap that places the stream there with 3 replicas; with fewer
 * regions, one replica and a warning that says why.
 */
import test from "ava";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { planDeployment, type KeySource } from "../../policies/deploy/deployment-plan.ts";
import { parseDeployment } from "../../policies/deploy/deployment-check.ts";
import { parseBootstrap } from "../../policies/deploy/bootstrap-file.ts";
import { controlLogTopology } from "../../policies/deploy/control-servers.ts";
import { loopbackDeployment } from "../kit/index.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";
import { custodyCli } from "../kit/custody-cli.ts";

const keys = (): KeySource => {
  let n = 0;
  return { holderKey: () => ({ pkcs8: new Uint8Array([++n]), publicRaw: new Uint8Array(32).fill(n) }), dataKey: () => new Uint8Array(32).fill(0xdd) };
};
const security = () => {
  let u = 0;
  return { nkeyUser: () => ({ seed: `SU${++u}`, publicKey: `U${String.fromCharCode(65 + u).repeat(55)}` }), caPem: "CA\n" };
};
const text = (plan: ReturnType<typeof planDeployment>, path: string) => plan.files.find((f) => f.path === path)!.contents as string;
type Region = { host: string; port: number; httpPort: number; clusterPort: number; gatewayPort: number; jetstreamDir: string; controlServer: { port: number; httpPort: number; clusterPort: number; gatewayPort: number; jetstreamDir: string } };

test("three regions: three control servers, one per region, in their own cluster with routes to each other and gateways to every region, secured like the regions' servers; the regions' servers run no JetStream", async (t) => {
  const raw = await loopbackDeployment(tempDir("custody-ctl-topo-"), { extraRegions: ["eu"] });
  const d = parseDeployment(raw);
  const regions = raw["regions"] as Record<string, Region>;
  const plan = planDeployment(d, "/out", keys(), security());
  t.deepEqual(plan.warnings, []);
  t.deepEqual(plan.controlServers.map((c) => [c.region, c.cluster, c.serverName, c.config, c.httpPort]), ["east", "west", "eu"].map((r) => [r, "control-ctl", `control-ctl-${r}`, `/out/nats/control-ctl-${r}.conf`, regions[r]!.controlServer.httpPort]));
  t.deepEqual(plan.bootstrap.controlStream, { replicas: 3, cluster: "control-ctl" });
  t.deepEqual(parseBootstrap(JSON.parse(text(plan, "/out/bootstrap.json"))).controlStream, { replicas: 3, cluster: "control-ctl" }, "bootstrap.json carries the placement");
  t.deepEqual((JSON.parse(text(plan, "/out/roles.json")) as { controlServers: unknown }).controlServers, plan.controlServers);
  const routes = ["east", "west", "eu"].map((r) => `"nats-route://127.0.0.1:${regions[r]!.controlServer.clusterPort}"`).join(", ");
  for (const r of ["east", "west", "eu"]) {
    const c = regions[r]!.controlServer;
    const conf = text(plan, `/out/nats/control-ctl-${r}.conf`);
    t.true(conf.includes(`server_name: "control-ctl-${r}"`), conf);
    t.true(conf.includes(`listen: "127.0.0.1:${c.port}"`) && conf.includes(`http: "127.0.0.1:${c.httpPort}"`));
    t.true(conf.includes(`jetstream { store_dir: ${JSON.stringify(c.jetstreamDir)} }`));
    t.true(conf.includes(`cluster {\n  name: "control-ctl"\n  listen: "127.0.0.1:${c.clusterPort}"\n  routes: [${routes}]`), conf);
    t.true(conf.includes(`gateway {\n  name: "control-ctl"\n  listen: "127.0.0.1:${c.gatewayPort}"`), conf);
    for (const o of ["east", "west", "eu"]) t.true(conf.includes(`{ name: "${o}", url: "nats://127.0.0.1:${regions[o]!.gatewayPort}" }`), `${r} has a gateway to ${o}`);
    t.false(conf.includes(`{ name: "control-ctl", urls`), "no gateway to its own cluster");
    // Secured as its region's server: the same users, and the region's certificate on clients, routes and gateways.
    t.true(conf.includes("authorization {") && conf.includes("nkey: "), "nkey users");
    t.is(conf.match(new RegExp(`cert_file: "/out/nats/tls/${r}-cert.pem"`, "g"))?.length, 3, "client, route and gateway TLS with the region's certificate");
    t.is(conf.match(/verify: true/g)?.length, 2, "routes and gateways verify their peers");
    const region = text(plan, `/out/nats/${r}.conf`);
    const urls = ["east", "west", "eu"].map((x) => `"nats://127.0.0.1:${regions[x]!.controlServer.gatewayPort}"`).join(", ");
    t.true(region.includes(`{ name: "control-ctl", urls: [${urls}] }`), `region ${r} has a gateway to the control cluster: ${region}`);
    t.false(region.includes("jetstream {"), "the region's server keeps no JetStream state: the meta group is the control servers");
  }
});

test("a region's control server defaults to its ports + 1 and its JetStream directory with -control; only the first three regions get one", async (t) => {
  const raw = await loopbackDeployment(tempDir("custody-ctl-topo-"), { extraRegions: ["eu", "ap"] });
  const regions = raw["regions"] as Record<string, Partial<Region>>;
  for (const r of Object.values(regions)) delete r.controlServer;
  const topo = controlLogTopology(parseDeployment(raw));
  if (!topo.replicated) return t.fail("replicated");
  t.deepEqual(topo.servers.map((s) => s.region), ["east", "west", "eu"]);
  const east = regions["east"]!;
  t.like(topo.servers[0], { port: east.port! + 1, httpPort: east.httpPort! + 1, clusterPort: east.clusterPort! + 1, gatewayPort: east.gatewayPort! + 1, jetstreamDir: `${east.jetstreamDir}-control` });
  // Consecutive region ports would put the control server on the region server's: refused, naming the region.
  const clashing = { ...raw, regions: { ...regions, west: { ...regions["west"], port: 4222, httpPort: 4223, clusterPort: 4224, gatewayPort: 4225 } } };
  t.throws(() => parseDeployment(clashing), { message: /regions\.west\.controlServer: the control server's ports 4223, 4224, 4225, 4226 clash/ });
});

test("two regions, or controlLog.replicas 1: a single replica, no control servers, and a warning naming why; replicas 3 on two regions and a region named like the control cluster are refused", async (t) => {
  const two = await loopbackDeployment(tempDir("custody-ctl-topo-"));
  const plan = planDeployment(parseDeployment(two), "/out", keys(), security());
  t.deepEqual(plan.controlServers, []);
  t.is(plan.bootstrap.controlStream, undefined);
  t.deepEqual(plan.warnings, ["control log ctl has a single replica (the deployment has 2 regions and a replicated control log needs 3): losing the region whose server stores it (east) loses the log"]);
  // A required scenario that takes that region is named: the deployment promises what its control log cannot give.
  const promising = await loopbackDeployment(tempDir("custody-ctl-topo-"), { volumeExtras: { scenarios: [{ name: "east lost", losses: [{ domain: "region:east", kind: "site_destruction" }], deadlineSec: 900, required: true }] } });
  t.regex(planDeployment(parseDeployment(promising), "/out", keys(), security()).warnings[0]!, /loses the log; required scenarios that lose it: vol-d: east lost$/);
  t.false(text(plan, "/out/nats/east.conf").includes("control-ctl"));
  t.true(text(plan, "/out/nats/east.conf").includes("jetstream {"), "a single-replica log lives on a region's server");
  const three = await loopbackDeployment(tempDir("custody-ctl-topo-"), { extraRegions: ["eu"], controlReplicas: 1 });
  t.regex(planDeployment(parseDeployment(three), "/out", keys(), security()).warnings[0]!, /controlLog\.replicas is 1/);
  t.throws(() => parseDeployment({ ...two, controlLog: { replicas: 3 } }), { message: /controlLog\.replicas: 3 replicas need 3 regions/ });
  const regions = three["regions"] as Record<string, unknown>;
  t.throws(() => parseDeployment({ ...three, controlLog: undefined, regions: { ...regions, "control-ctl": regions["eu"] } }), { message: /region control-ctl has the name of the control log's cluster/ });
});

test("custody init prints the single-replica warning on stderr and keeps --json one line", async (t) => {
  const dir = tempDir("custody-ctl-topo-");
  const file = join(dir, "deployment.json");
  writeFileSync(file, JSON.stringify(await loopbackDeployment(dir)));
  const r = await custodyCli(["init", file, "--out", join(dir, "out"), "--json"]);
  t.regex(r.stderr, /^warning: control log ctl has a single replica \(the deployment has 2 regions/m);
  t.deepEqual((JSON.parse(r.stdout.trim()) as { controlServers: unknown[] }).controlServers, []);
});
