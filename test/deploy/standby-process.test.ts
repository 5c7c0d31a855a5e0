/**
 * Healing in a deployment, on real processes: `custody init` declares a standby disk holder whose
 * process runs from the start but is never admitted by the bootstrap. When the west disk holder is
 * SIGKILLed for good, writes acknowledged before the kill sit on the east RAM holder alone, so
 * losing its host would lose them. Nobody restarts anything: the controller finds no admitted
 * holder to copy to, takes the standby's own signed admission request (checked against the key
 * `custody init` issued it), admits it, makes it responsible for the lane and copies the gap there,
 * so the scenario's surviving cut moves past the kill on the standby's receipts.
 */
import test from "ava";
import { join } from "node:path";
import { pidAlive } from "../kit/deployed-process.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { sample } from "../kit/prometheus-sample.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 120_000;
const STOP_MS = 60_000;

type Ps = { processes: { role: string; id: string; incarnation?: number; counters: Record<string, number>; figures: Record<string, number> }[] };

test("a disk holder SIGKILLed for good: the controller enlists the deployment's standby process by its issued key, and copies what only h-e1 holds to it: crash:h-e1's cut moves on without a restart", async (t) => {
  const { out, index, servers, roles, everyPid, start, eastUrl, asOperator, explain } = await deployedNetwork(t, "custody-standby-", { metrics: true, baseBuilder: false, standby: true });

  const boot = JSON.parse(await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl, "--json"])) as { admitted: string[] };
  t.deepEqual(boot.admitted, ["h-e1", "h-w1"], "the bootstrap never admits the standby");

  await start("controller-ctl-1");
  for (const r of index.roles.filter((x) => x.role === "holder")) await start(r.instance);
  await start("writer-w1");
  const controllerMetrics = String((await roles.get("controller-ctl-1")!.ready(0))["metrics"]);
  const scrape = async () => await (await fetch(controllerMetrics)).text();
  const ps = async () => JSON.parse(await custody(["ps", "--server", eastUrl, ...asOperator, "--wait", "1500", "--json"])) as Ps;
  const crashE1 = { volume: "vol-d", scenario: "crash:h-e1" };
  const explainAll = async () => `${await custody(["status", "vol-d", "--server", eastUrl, ...asOperator, "--json"]).catch(() => "")}\n${await custody(["ps", "--server", eastUrl, ...asOperator, "--json"]).catch(() => "")}\n${explain()}`;

  const acked = await until("writes confirmed and nothing lost to crash:h-e1", SETTLE_MS, async () => {
    const m = await scrape();
    const a = sample(m, "custody_acknowledged_seq", { volume: "vol-d", lane: "l0" }) ?? 0;
    return a >= 20 && sample(m, "custody_scenario_lost_seqs", crashE1) === 0 && sample(m, "custody_scenario_met", crashE1) === 1 ? a : undefined;
  }, explainAll);
  const before = await ps();
  const standbyBefore = before.processes.find((p) => p.id === "h-s1")!;
  t.like(standbyBefore, { role: "holder", incarnation: 1 }, "the standby process runs, waiting");
  t.is(standbyBefore.figures["retainedBytes"], 0, "and holds nothing before it is enlisted");

  // The west disk holder dies and stays dead.
  const atKill = sample(await scrape(), "custody_acknowledged_seq", { volume: "vol-d", lane: "l0" }) ?? 0;
  t.true(atKill >= acked);
  t.is((await roles.get("holder-h-w1")!.signal("SIGKILL", STOP_MS)).signal, "SIGKILL");
  const killedAt = Date.now();
  type Status = { scenarios: { name: string; cut: [string, number][]; contributors: string[] }[]; evidence: { holder: string; stale: boolean }[] };
  const status = async () => JSON.parse(await custody(["status", "vol-d", "--server", eastUrl, ...asOperator, "--json"])) as Status;
  // Writes after the kill reach only h-e1 (and the dead h-w1): a crash:h-e1 cut well past the kill
  // point exists only because the standby holds them.
  const healed = await until("the standby is enlisted and crash:h-e1's cut moves past the kill on it", SETTLE_MS, async () => {
    const s = await status();
    const e1 = s.scenarios.find((x) => x.name === "crash:h-e1");
    const cut = e1?.cut.find(([l]) => l === "l0")?.[1] ?? 0;
    return cut >= atKill + 100 && e1!.contributors.includes("h-s1") ? s : undefined;
  }, explainAll);
  t.log(`standby enlisted and covering ${Date.now() - killedAt} ms after the kill`);
  t.like(healed.evidence.find((e) => e.holder === "h-s1"), { stale: false });
  const p = await ps();
  const ctl = p.processes.find((x) => x.role === "controller")!;
  t.is(ctl.counters["coverage_enlisted"], 1, JSON.stringify(ctl.counters));
  t.is(ctl.counters["coverage_enlist_standby_not_announced"] ?? 0, 0);
  t.is(ctl.counters["standby_key_mismatch"] ?? 0, 0);
  t.is(ctl.counters["admission_unknown_holder"] ?? 0, 0, "a waiting standby's requests are not refusals");
  const standby = p.processes.find((x) => x.id === "h-s1")!;
  t.true(standby.figures["vol-d/l0.retainedMax"]! >= atKill + 100, JSON.stringify(standby.figures));
  t.true(standby.figures["retainedDiskBytes"]! > 0, "a disk standby: what it was sent is on its disk");
  const shown = JSON.parse(await custody(["control", "show", "--server", eastUrl, ...asOperator, "--region", "ctl", "--json"])) as { holders: { holderId: string; incarnation: number; status: string }[] };
  t.like(shown.holders.find((h) => h.holderId === "h-s1"), { incarnation: 1, status: "active" }, "admitted in the control log with the incarnation it asked for");

  for (const instance of ["writer-w1", "controller-ctl-1", "holder-h-e1", "holder-h-s1"]) await roles.get(instance)!.signal("SIGTERM", STOP_MS);
  for (const s of servers) t.true((await s.signal("SIGTERM", STOP_MS)).inTime, s.log);
  t.deepEqual(everyPid.filter(pidAlive), [], "no process left");
});
