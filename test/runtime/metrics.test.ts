/**
 * `/metrics`: a role started with `custody run` serves its counters in the Prometheus text format,
 * and a controller's per-scenario gauges follow its status document — the RPO of a scenario rises
 * when the holder its cut rests on is killed while writes go on, and its verdict turns once the
 * stranded writes are past their receipt deadline and the grace. Every series names its process
 * (`target_info`: service.name custody-<role>, service.instance.id its id).
 */
import anyTest, { type TestFn } from "ava";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { serveMetrics } from "../../actors/runtime/metrics-endpoint.ts";
import { freePort } from "../kit/nats-server.ts";
import { custodyCommand } from "../kit/custody-command.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy } from "../e2e/deployment.ts";
import { blockData, e2eHolderConfig, eventually, site, tempDir } from "../e2e/e2e-fixture.ts";
import { sample } from "../kit/prometheus-sample.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

test.serial("custody run holder with a metrics port prints the endpoint in its ready line and serves its counters there", async (t) => {
  const dir = tempDir("custody-metrics-");
  const keyFile = join(dir, "h.key");
  writeFileSync(keyFile, generateHolderKeyPair().privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const port = await freePort();
  const holder = { ...e2eHolderConfig("h-m", site("s-1", "r1", "az1"), "vol-m", [{ lane: "l0", upstream: ["w1"] }]), incarnation: undefined };
  const cfg = { role: "holder", nats: { servers: t.context.supercluster.regions["us-east"]!.url }, metrics: { port }, controlRegion: "r-m", stateDir: join(dir, "state"), keyFile, holder };
  // The operator's bootstrap of the control stream (holders never create it).
  const nc = await connectNats({ servers: cfg.nats.servers, name: "operator", maxReconnectAttempts: 0 });
  await (await initJetStreamControlLog(nc, { region: cfg.controlRegion })).log.close();
  await closeNats(nc);
  writeFileSync(join(dir, "h.json"), JSON.stringify(cfg));
  const c = custodyCommand(["run", "holder", "--config", join(dir, "h.json")]);
  const child = spawn(c.command, c.args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr!.on("data", (b) => (stderr += String(b)));
  const ready = await new Promise<{ metrics?: string }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b) => {
      out += String(b);
      const line = out.split("\n").find((l) => l.includes('"ready":true'));
      if (line !== undefined) resolve(JSON.parse(line) as { metrics?: string });
    });
    void exited.then((code) => reject(new Error(`exited ${code} before ready: ${stderr}`)));
  });
  t.is(ready.metrics, `http://127.0.0.1:${port}/metrics`);
  const text = await (await fetch(ready.metrics!)).text();
  t.regex(text, /# TYPE custody_events_total counter/);
  // The process names itself: OpenTelemetry's resource, as the exporter's target_info shows it.
  t.regex(text, /^target_info\{[^}]*service_name="custody-holder"[^}]*\} 1$/m, text);
  t.regex(text, /^target_info\{[^}]*service_instance_id="h-m"[^}]*\} 1$/m, text);
  t.true((sample(text, "custody_events_total", { role: "holder", id: "h-m", event: "admission_requested" }) ?? 0) >= 1, text);
  // The holder's own figures are wired in the process: its lane's custody and credit gauges (nothing written yet).
  t.is(sample(text, "custody_holder_custody_bytes", { holder: "h-m", volume: "vol-m", lane: "l0", residency: "ram" }), 0, text);
  t.not(sample(text, "custody_holder_credits_outstanding_bytes", { holder: "h-m", volume: "vol-m", lane: "l0" }), undefined);
  child.kill("SIGTERM");
  t.is(await exited, 0, stderr);
  await t.throwsAsync(fetch(ready.metrics!), undefined, "the endpoint closes with the process");
});

test.serial("a controller's scenario gauges follow its status: the RPO of a scenario rises when the holders its cut rests on are killed while writes go on", async (t) => {
  // Coverage repair held back: otherwise it copies the new writes to Europe within about a second
  // and the loss this test watches the gauges for is gone before it has aged.
  const d = await deploy(t.context.supercluster, "vol-metrics", "use-met", { coverageRepair: { graceMs: 600_000 } });
  t.context.defer(() => d.stop());
  const ctl = d.controller;
  const endpoint = await serveMetrics({ role: "controller", id: ctl.id, counters: () => ctl.counters.snapshot(), status: () => ctl.status() }, { port: await freePort() });
  t.context.defer(() => endpoint.close());
  const scrape = async () => await (await fetch(endpoint.url!)).text();
  const write = async (n: number, seed: number) => {
    for (let i = 0; i < n; i++) await d.writer.write((seed * 7 + i) % BLOCKS, blockData(seed * 100 + i));
    await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  };
  await write(20, 1);
  const scenario = { volume: "vol-metrics", scenario: "US-East lost" };
  // Caught up: the controller has heard of every write (its acknowledged head is the writer's head)
  // and nothing of it is lost to the scenario. Waiting on the loss alone could read a document
  // from before the last acknowledgement reached the controller.
  const head = d.writer.writer.heads()["l0"]!;
  const caughtUp = () => {
    const doc = ctl.status();
    const acked = doc?.acknowledged.find(([lane]) => lane === "l0")?.[1];
    return acked === head && doc?.scenarios.find((s) => s.name === "US-East lost")?.lostSeqs === 0;
  };
  await eventually(caughtUp, "every write acknowledged to the controller and nothing lost to US-East lost", 10_000);
  const before = await scrape();
  t.is(sample(before, "custody_scenario_rpo_seconds", scenario), 0);
  t.is(sample(before, "custody_scenario_lost_seqs", scenario), 0);
  t.is(sample(before, "custody_scenario_lost_bytes", scenario), 0);
  t.is(sample(before, "custody_scenario_met", scenario), 1);
  t.true((sample(before, "custody_acknowledged_seq", { volume: "vol-metrics", lane: "l0" }) ?? 0) >= 1);
  t.true((sample(before, "custody_events_total", { role: "controller", event: "evaluations" }) ?? 0) > 0);

  // US-West's store and the waypoint to Europe carry every copy outside US-East: without them, new
  // writes are lost to that scenario.
  await d.kill("h-w");
  await d.kill("h-nj");
  // Every status document from here on, as the controller publishes them (it evaluates every 50 ms).
  const docs: NonNullable<ReturnType<typeof ctl.status>>[] = [];
  const watching = setInterval(() => {
    const doc = ctl.status();
    if (doc !== undefined && doc !== docs.at(-1)) docs.push(doc);
  }, 20);
  t.teardown(() => clearInterval(watching));
  await write(10, 2);
  await new Promise((r) => setTimeout(r, 1_500));
  await write(5, 3);
  let after = "";
  for (let i = 0; i < 300; i++) {
    after = await scrape();
    if (sample(after, "custody_scenario_met", scenario) === 0 && (sample(after, "custody_scenario_rpo_seconds", scenario) ?? 0) >= 1) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  clearInterval(watching);
  // The scrape may have read a document the 20 ms watcher had not picked up yet.
  const latest = ctl.status();
  if (latest !== undefined && latest !== docs.at(-1)) docs.push(latest);
  t.true((sample(after, "custody_scenario_lost_seqs", scenario) ?? 0) > 0, after);
  t.true((sample(after, "custody_scenario_rpo_seconds", scenario) ?? 0) >= 1, "the oldest write it would lose is over a second old");
  t.is(sample(after, "custody_scenario_met", scenario), 0);
  t.true((sample(after, "custody_scenario_lost_bytes", scenario) ?? 0) > 0, "the lag is also counted in bytes");
  // The lost writes are past their receipt deadline: overdue, and with those in flight they make up what it would lose.
  const overdue = sample(after, "custody_scenario_overdue_seqs", scenario) ?? 0;
  t.true(overdue > 0, after);
  t.is(overdue + (sample(after, "custody_scenario_in_flight_seqs", scenario) ?? -1), sample(after, "custody_scenario_lost_seqs", scenario) ?? 0);

  // The verdict turned only after the grace (default 2000 ms): never while the loss was younger.
  const rows = docs.map((doc) => ({ asOfMs: doc.asOfMs, ...doc.scenarios.find((x) => x.name === "US-East lost")! }));
  const turned = rows.findIndex((r) => r.verdict === "not_met");
  t.true(turned > 0, JSON.stringify(rows.slice(-3)));
  for (const r of rows.slice(0, turned)) t.true(r.verdict === "met" && (r.lossSinceMs === null || r.asOfMs - r.lossSinceMs! < 2_000), JSON.stringify(r));
  const first = rows[turned]!;
  t.true(first.asOfMs - first.lossSinceMs! >= 2_000, JSON.stringify(first));
  t.deepEqual(first.reasons, [`loses ${first.overdueSeqs} acknowledged write${first.overdueSeqs === 1 ? "" : "s"}, 0 allowed`]);
  t.true(rows.slice(turned).every((r) => r.verdict === "not_met"), "and it stays turned");
});
