/**
 * Verdicts that mean a loss (issue #47), on real processes: a healthy deployment `custody init`
 * wrote (loopback, the writer at 20 writes/s, both holders up) is watched as an operator would —
 * the controller's `custody_scenario_met` scraped and `custody status --json` read again and again
 * for 20 s. Writes in flight are there in many frames; no scenario's verdict changes, ever. The
 * controller's metrics name it (service.name custody-controller, service.instance.id ctl-1).
 */
import test from "ava";
import { join } from "node:path";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { sample } from "../kit/prometheus-sample.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** A bound that only ends a hung start; it measures nothing. */
const SETTLE_MS = 90_000;
/** How long the healthy deployment is watched. */
const WATCH_MS = 20_000;

type Status = { asOfMs: number; scenarios: { name: string; verdict?: string; reasons?: string[]; lostSeqs: number; inFlightSeqs?: number; overdueSeqs?: number }[] };

test("a healthy deployment at 20 writes/s: custody_scenario_met and custody status --json never change a verdict over 20 s, though writes are in flight", async (t) => {
  const t0 = Date.now();
  const { out, index, start, eastUrl, asOperator, explain } = await deployedNetwork(t, "custody-steady-", { metrics: true, workloadIntervalMs: 50, baseBuilder: false });
  await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl, "--json"]);
  const metricsUrl = String((await start("controller-ctl-1"))["metrics"]);
  await Promise.all(index.roles.filter((x) => x.role === "holder").map((r) => start(r.instance)));
  await start("writer-w1");

  const status = async () => JSON.parse(await custody(["status", "vol-d", "--server", eastUrl, ...asOperator, "--json"])) as Status;
  const scrape = async () => await (await fetch(metricsUrl)).text();
  // Settled: writes flow and both scenarios (each holder's host crashing) are met.
  const first = await until("writes acknowledged and every scenario met", SETTLE_MS, async () => {
    const s = await status();
    const m = await scrape();
    return (sample(m, "custody_acknowledged_seq", { volume: "vol-d", lane: "l0" }) ?? 0) >= 20 && s.scenarios.length === 2 && s.scenarios.every((x) => x.verdict === "met") ? s : undefined;
  }, explain);
  t.log(`settled after ${Date.now() - t0} ms`);
  const names = first.scenarios.map((x) => x.name).sort();
  t.deepEqual(names, ["crash:h-e1", "crash:h-w1"]);
  // The controller names itself in its metrics (OpenTelemetry resource; it was unknown_service:node).
  t.regex(await scrape(), /^target_info\{[^}]*service_name="custody-controller",service_instance_id="ctl-1"[^}]*\} 1$/m);

  // Two watchers side by side until the window closes: the gauge, and the status command's documents.
  const gauge: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const frames: Status[] = [];
  const end = Date.now() + WATCH_MS;
  const watchGauge = async () => {
    while (Date.now() < end) {
      const m = await scrape();
      for (const n of names) gauge[n]!.push(sample(m, "custody_scenario_met", { volume: "vol-d", scenario: n }) ?? -1);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const watchStatus = async () => {
    while (Date.now() < end) frames.push(await status());
  };
  await Promise.all([watchGauge(), watchStatus()]);

  const changes = (xs: readonly unknown[]) => xs.filter((x, i) => i > 0 && x !== xs[i - 1]).length;
  const verdicts = (n: string) => frames.map((f) => f.scenarios.find((x) => x.name === n)?.verdict);
  for (const n of names) {
    t.is(changes(gauge[n]!), 0, `${n}: custody_scenario_met ${gauge[n]!.join("")}`);
    t.true(gauge[n]!.every((v) => v === 1), `${n}: custody_scenario_met ${gauge[n]!.join("")}`);
    t.is(changes(verdicts(n)), 0, `${n}: ${JSON.stringify(frames.map((f) => f.scenarios.find((x) => x.name === n)))}`);
    t.true(verdicts(n).every((v) => v === "met"));
  }
  t.log(`${frames.length} status frames, ${gauge[names[0]!]!.length} gauge samples per scenario`);
  // What once turned these frames to NOT MET is still there: writes a scenario would lose, all in flight.
  const rows = frames.flatMap((f) => f.scenarios);
  t.true(rows.some((x) => x.lostSeqs > 0), "some frames show writes not yet receipted by the other holder");
  t.true(rows.every((x) => x.inFlightSeqs === x.lostSeqs && x.overdueSeqs === 0), JSON.stringify(rows.filter((x) => x.inFlightSeqs !== x.lostSeqs)));
  // The human table shows them apart: in flight, and lost (none).
  const table = await custody(["status", "vol-d", "--server", eastUrl, ...asOperator]);
  t.regex(table, /in flight\s+lost\s+at risk bytes/);
});
