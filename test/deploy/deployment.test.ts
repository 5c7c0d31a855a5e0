/**
 * The deployment, end to end on real processes: `custody init` writes the files, the nats-servers
 * start from the configs it wrote, `custody bootstrap` admits the holders, every role starts with
 * `custody run` from its config, the writer's workload writes, `custody ps` lists every role, the
 * controller's `/metrics` shows a scenario's loss rise when a holder is SIGKILLed (its verdict
 * turning once the stranded writes are past their receipt deadline and the grace) and fall back to
 * zero when the same config starts it again (a new incarnation), and SIGTERM stops every process
 * with exit 0 and nothing left.
 */
import test from "ava";
import { join } from "node:path";
import { pidAlive, type Ended } from "../kit/deployed-process.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { sample } from "../kit/prometheus-sample.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 90_000;
const STOP_MS = 60_000;

test("custody init → nats-servers → custody bootstrap → custody run for every role: ps lists them, the RPO gauge rises when a holder is SIGKILLed and falls back when it restarts, SIGTERM ends everything with exit 0", async (t) => {
  const { out, index, servers, roles, everyPid, start, eastUrl, asOperator, explain } = await deployedNetwork(t, "custody-deploy-", { metrics: true });

  const boot = JSON.parse(await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl, "--json"])) as { admitted: string[]; obligations: string[] };
  t.deepEqual(boot.admitted, ["h-e1", "h-w1"]);
  t.deepEqual(boot.obligations, ["vol-d-l0"]);
  const rerun = JSON.parse(await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl, "--json"])) as { admitted: string[]; obligations: string[]; skipped: string[] };
  t.deepEqual([rerun.admitted, rerun.obligations, rerun.skipped], [[], [], ["holder h-e1", "holder h-w1", "obligation vol-d-l0"]], "a second bootstrap commits nothing");

  // The controller first: a holder's process claims an incarnation above the admitted one (the
  // bootstrap's 1), which the controller admits because the same key signs it (key continuity).
  await start("controller-ctl-1");
  for (const r of index.roles.filter((x) => x.role === "holder")) t.is((await start(r.instance))["incarnation"], 2);
  for (const r of index.roles.filter((x) => x.role === "writer" || x.role === "base-builder")) await start(r.instance);
  const controllerMetrics = String((await roles.get("controller-ctl-1")!.ready(0))["metrics"]);

  // custody ps lists every role through the services client, with the holders' incarnations.
  type Ps = { processes: { role: string; id: string; incarnation?: number; figures: Record<string, number> }[] };
  const ps = async () => JSON.parse(await custody(["ps", "--server", eastUrl, ...asOperator, "--wait", "1500", "--json"])) as Ps;
  const listed = await until("ps lists all five roles", SETTLE_MS, async () => {
    const p = await ps();
    return p.processes.length === 5 ? p : undefined;
  });
  t.deepEqual(listed.processes.map((p) => `${p.role}/${p.id}/${p.incarnation ?? "-"}`), ["base-builder/base-builder-h-w1/-", "controller/ctl-1/-", "holder/h-e1/2", "holder/h-w1/2", "writer/w1/1"]);

  // Writes go on; with both holders up, no holder's crash would lose anything.
  const crashE1 = { volume: "vol-d", scenario: "crash:h-e1" };
  const scrape = async () => await (await fetch(controllerMetrics)).text();
  // On a timeout: the controller's scenario figures and what every process says about itself.
  const explainAll = async () => `${(await scrape().catch(() => "")).split("\n").filter((l) => l.startsWith("custody_scenario")).join("\n")}\n${await custody(["ps", "--server", eastUrl, ...asOperator, "--json"]).catch(() => "")}\n${explain()}`;
  await until("writes confirmed and nothing lost to crash:h-e1", SETTLE_MS, async () => {
    const m = await scrape();
    return (sample(m, "custody_acknowledged_seq", { volume: "vol-d", lane: "l0" }) ?? 0) >= 20 && sample(m, "custody_scenario_lost_seqs", crashE1) === 0 && sample(m, "custody_scenario_met", crashE1) === 1 ? true : undefined;
  }, explainAll);

  // The west holder dies: new writes now sit on h-e1 alone, so losing h-e1's host would lose them.
  const killed = await roles.get("holder-h-w1")!.signal("SIGKILL", STOP_MS);
  t.is(killed.signal, "SIGKILL");
  // Those writes are in flight for their receipt deadline; past it they are lost, and once that has
  // held the grace the verdict turns (docs/policies.md, "Verdicts over time").
  const risen = await until("crash:h-e1 loses writes, its RPO rises and its verdict turns", SETTLE_MS, async () => {
    const m = await scrape();
    return (sample(m, "custody_scenario_lost_seqs", crashE1) ?? 0) > 0 && (sample(m, "custody_scenario_rpo_seconds", crashE1) ?? 0) > 0 && sample(m, "custody_scenario_met", crashE1) === 0 ? m : undefined;
  }, explainAll);
  t.true((sample(risen, "custody_scenario_overdue_seqs", crashE1) ?? 0) > 0, "the stranded writes are past their receipt deadline");
  type Row = { name: string; verdict: string; reasons: string[]; overdueSeqs: number; lossSinceMs: number | null };
  const doc = JSON.parse(await custody(["status", "vol-d", "--server", eastUrl, ...asOperator, "--json"])) as { asOfMs: number; scenarios: Row[] };
  const row = doc.scenarios.find((x) => x.name === "crash:h-e1")!;
  t.is(row.verdict, "not_met");
  t.true(row.reasons.includes(`loses ${row.overdueSeqs} acknowledged write${row.overdueSeqs === 1 ? "" : "s"}, 0 allowed`), JSON.stringify(row));
  t.true(doc.asOfMs - row.lossSinceMs! >= 2_000, `the loss has held its grace: ${JSON.stringify(row)}`);

  // The same config starts it again: a new incarnation, admitted by key continuity; what it lacks
  // reaches it again (the writer's retained units, coverage repair for a unit the killed
  // incarnation had receipted from RAM). Nothing else could cover: it is the only other holder.
  t.is((await start("holder-h-w1"))["incarnation"], 3);
  const fallen = await until("crash:h-e1 loses nothing again", SETTLE_MS, async () => {
    const m = await scrape();
    return sample(m, "custody_scenario_lost_seqs", crashE1) === 0 && sample(m, "custody_scenario_met", crashE1) === 1 ? m : undefined;
  }, explainAll);
  t.is(sample(fallen, "custody_scenario_rpo_seconds", crashE1), 0);
  const again = await until("ps shows h-w1's new incarnation", SETTLE_MS, async () => {
    const p = await ps();
    return p.processes.some((x) => x.id === "h-w1" && x.incarnation === 3) ? p : undefined;
  });
  t.is(again.processes.length, 5);

  // SIGTERM: the writer first (it drains to custody), then the others; each exits 0 in time.
  const order = ["writer-w1", "base-builder-h-w1", "controller-ctl-1", "holder-h-e1", "holder-h-w1"];
  const ends: Record<string, Ended & { inTime: boolean }> = {};
  for (const instance of order) ends[instance] = await roles.get(instance)!.signal("SIGTERM", STOP_MS);
  t.deepEqual(
    Object.fromEntries(Object.entries(ends).map(([k, e]) => [k, `${e.code}/${e.signal}/${e.inTime}`])),
    Object.fromEntries(order.map((k) => [k, "0/null/true"])),
    explain(),
  );
  t.deepEqual((await ps()).processes, [], "no role is listed once every process stopped");
  for (const s of servers) t.true((await s.signal("SIGTERM", STOP_MS)).inTime, s.log);
  t.deepEqual(everyPid.filter(pidAlive), [], "no process left");
});
