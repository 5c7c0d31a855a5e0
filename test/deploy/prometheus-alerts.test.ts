/**
 * The shipped alerting rules in a real Prometheus (issue #47): Debian's `prometheus` binary, on a
 * free loopback port with a temporary TSDB, scrapes every `custody run` process of a two-region
 * loopback deployment (job "custody", targets labelled custody_role and custody_id, as
 * examples/prometheus/prometheus.yml does) every second and evaluates examples/prometheus/custody-rules.yml
 * every second, the file as shipped except every `for:` set to 3 s. When every process of the west
 * region (its nats-server, holder h-w1 and the base builder beside it) is SIGKILLed, new writes
 * rest on h-e1 alone: CustodyRequiredScenarioNotMet fires for vol-d / crash:h-e1 and
 * CustodyRoleDown for the killed roles. The region's processes then start again from the same
 * configs (as their service manager would); the product covers h-w1 again by itself (the writer's
 * retained units, coverage repair), and both alerts resolve.
 */
import test from "ava";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DEPLOYMENT_READY_MS, DeployedProcess, natsServerBin, startPrometheus, waitForRegions, type PrometheusAlert, type PrometheusHandle } from "../kit/index.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { shippedRules, withFor } from "../kit/prometheus-rules.ts";
import { untilValue as until } from "../kit/until.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 90_000;
const STOP_MS = 20_000;
/** The test's `for:` in place of the shipped minutes: long enough that one odd sample never fires an alert. */
const FOR = "3s";
const WEST = ["holder-h-w1", "base-builder-h-w1"];

const firing = (alerts: readonly PrometheusAlert[], name: string) => alerts.filter((a) => a.labels["alertname"] === name && a.state === "firing");
const active = (alerts: readonly PrometheusAlert[], name: string) => alerts.filter((a) => a.labels["alertname"] === name);

test("a real Prometheus with the shipped rules: CustodyRequiredScenarioNotMet fires for crash:h-e1 when the west region is SIGKILLed, and resolves once its processes run again", async (t) => {
  const began = Date.now();
  const { out, index, servers, roles, start, eastUrl, explain } = await deployedNetwork(t, "custody-prom-", { metrics: true });
  await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl, "--json"]);

  // Every role as its service would start it; each ready line names its /metrics URL. custody_id is
  // the id `custody ps` lists (a base builder's is its instance name).
  const targets: { targets: string[]; labels: { custody_role: string; custody_id: string } }[] = [];
  // The controller first, then the holders together, then the writer and the base builder together.
  for (const wave of [["controller"], ["holder"], ["writer", "base-builder"]]) {
    await Promise.all(
      index.roles
        .filter((r) => wave.includes(r.role))
        .map(async (r) => {
          const ready = await start(r.instance);
          const id = String(ready["controllerId"] ?? ready["holderId"] ?? ready["writerId"] ?? r.instance);
          targets.push({ targets: [new URL(String(ready["metrics"])).host], labels: { custody_role: r.role, custody_id: id } });
        }),
    );
  }
  t.is(targets.length, 5, "controller, two holders, writer, base builder");

  const rolesReady = Date.now();
  const promDir = tempDir("custody-prometheus-");
  let prometheus: PrometheusHandle | undefined;
  t.teardown(async () => {
    await prometheus?.process.signal("SIGKILL", 10_000);
    rmSync(promDir, { recursive: true, force: true });
  });
  writeFileSync(join(promDir, "custody-rules.yml"), withFor(shippedRules(), FOR));
  prometheus = await startPrometheus(
    promDir,
    {
      global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
      rule_files: [join(promDir, "custody-rules.yml")],
      scrape_configs: [{ job_name: "custody", static_configs: targets }],
    },
    SETTLE_MS,
  );
  const prom = prometheus;
  const explainAll = async () => `alerts: ${JSON.stringify(await prom.alerts().catch(() => []))}\ntargets: ${JSON.stringify((await prom.targets().catch(() => [])).map((x) => [x.labels["custody_id"], x.health, x.lastError]))}\n${prom.process.log.slice(-3_000)}\n${explain()}`;
  const met = async () => (await prom.query('custody:scenario_met:min{volume="vol-d",scenario="crash:h-e1"}'))[0]?.value;
  const notMet = (alerts: readonly PrometheusAlert[]) => active(alerts, "CustodyRequiredScenarioNotMet").filter((a) => a.labels["scenario"] === "crash:h-e1");

  // Healthy: every target up, writes acknowledged, crash:h-e1 met and not alerting.
  await until("every target up, writes acknowledged, crash:h-e1 met with no alert", SETTLE_MS, async () => {
    const up = await prom.query('up{job="custody"} == 1');
    const acked = (await prom.query('custody_acknowledged_seq{volume="vol-d",lane="l0"}'))[0]?.value ?? 0;
    return up.length === targets.length && acked >= 20 && (await met()) === 1 && notMet(await prom.alerts()).length === 0 ? true : undefined;
  }, explainAll);

  const healthyAt = Date.now();

  // The west region goes: its nats-server and both of its roles, SIGKILLed together.
  const west = servers.find((s) => s.name === "nats-west")!;
  const killedAt = Date.now();
  const killed = await Promise.all([west, ...WEST.map((i) => roles.get(i)!)].map((p) => p.signal("SIGKILL", STOP_MS)));
  t.deepEqual(killed.map((k) => k.signal), ["SIGKILL", "SIGKILL", "SIGKILL"]);

  const fired = await until("CustodyRequiredScenarioNotMet firing for crash:h-e1", SETTLE_MS, async () => {
    const alerts = await prom.alerts();
    const a = firing(notMet(alerts), "CustodyRequiredScenarioNotMet");
    return a.length > 0 ? { alert: a[0]!, alerts, at: Date.now() } : undefined;
  }, explainAll);
  t.like(fired.alert.labels, { alertname: "CustodyRequiredScenarioNotMet", volume: "vol-d", scenario: "crash:h-e1", severity: "critical" });
  t.is(fired.alert.annotations["summary"], "vol-d: required scenario crash:h-e1 is not met");
  t.is(await met(), 0, "Prometheus holds the controller's verdict: not met");
  const down = await until("CustodyRoleDown firing for both killed roles", SETTLE_MS, async () => {
    const ids = firing(await prom.alerts(), "CustodyRoleDown").map((a) => a.labels["custody_id"]!).sort();
    return ids.includes("h-w1") && ids.includes("base-builder-h-w1") ? ids : undefined;
  }, explainAll);
  // A live role answering late under load may show up too: what counts is that both killed ones are there.
  t.true(down.includes("h-w1") && down.includes("base-builder-h-w1"), down.join(","));

  // Recovery: the region's processes start again from the configs they ran from.
  const recoveredAt = Date.now();
  const again = new DeployedProcess("nats-west", natsServerBin(), ["-c", index.natsServers.find((s) => s.region === "west")!.config]);
  t.teardown(async () => void (await again.signal("SIGKILL", 10_000)));
  const regions = (JSON.parse(readFileSync(join(dirname(out), "deployment.json"), "utf8")) as { regions: Record<string, { httpPort: number }> }).regions;
  await waitForRegions(index.natsServers, regions, [again, ...servers.filter((s) => s !== west)], () => `${again.log}\n${explain()}`, DEPLOYMENT_READY_MS);
  await Promise.all(WEST.map(start));
  const restartedAt = Date.now();

  const resolved = await until("CustodyRequiredScenarioNotMet and CustodyRoleDown resolved", SETTLE_MS, async () => {
    const alerts = await prom.alerts();
    return notMet(alerts).length === 0 && active(alerts, "CustodyRoleDown").length === 0 && (await met()) === 1 ? Date.now() : undefined;
  }, explainAll);

  const stopped = await prom.process.signal("SIGTERM", STOP_MS);
  t.deepEqual([stopped.code, stopped.inTime], [0, true], prom.process.log);
  t.log(`deployment up ${rolesReady - began} ms, healthy in Prometheus ${healthyAt - rolesReady} ms; kill → firing ${fired.at - killedAt} ms (for: ${FOR}, scrape and evaluation every 1 s); region restarted ${restartedAt - recoveredAt} ms, then resolved ${resolved - restartedAt} ms; test ${Date.now() - began} ms`);
});
