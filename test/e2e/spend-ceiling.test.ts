/**
 * The controller's spend ceiling on a real multi-region deployment (supercluster, JetStream control
 * log). The waypoint h-nj never runs, so the European store h-eu receives nothing and a scenario
 * that loses all of America keeps only what coverage repair copies to h-eu. Whether that copy is
 * optional work (the scenario is not required) or required work decides what a ceiling does to it.
 */
import anyTest, { type TestFn } from "ava";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { VolumeStatus } from "../../transport/protocol/wire/volume-status.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { SpendConfigInput } from "../../policies/spend-budget.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, type Deployment } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";
import { custodyCommand } from "../kit/custody-command.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

const run = promisify(execFile);
/** `custody <args>` as its own process (the bundled CLI; see test/kit/custody-command.ts). */
const custody = (args: string[]) => {
  const c = custodyCommand(args);
  return run(c.command, c.args);
};
const AMERICAS = "Americas lost";

/** Transatlantic copies cost $0.02/GB; the plan budgets repairs of up to 1 TB a month ($20). */
function spend(monthlyCeilingUsd: number): SpendConfigInput {
  const charge = [{ name: "inter_region", usdPerGB: 0.02 }];
  return {
    monthlyCeilingUsd,
    edges: [
      { from: "us-east", to: "eu", charges: charge },
      { from: "us-west", to: "eu", charges: charge },
    ],
    plan: { bytesPerSec: 0, catchUpBytes: 0, repairBytesPerFailure: 1e12, declaredFailuresPerPeriod: 1, longOutageSec: 0 },
  };
}

/** A deployment whose only scenarios are the AZ loss (required) and the loss of America (`required` as given). */
async function deployWith(t: { context: SuperclusterTestContext }, volume: string, americasRequired: boolean, ceilingUsd: number): Promise<Deployment> {
  const d = await deploy(t.context.supercluster, volume, `use-${volume}`, {
    releasable: [],
    external: ["h-nj"],
    coverageRepair: { graceMs: 300, retryMs: 1_000, optional: true },
    controller: { spend: spend(ceilingUsd) },
    topology: (topo) => ({
      ...topo,
      scenarios: [
        topo.scenarios[0]!,
        { name: AMERICAS, losses: ["region:us-east", "region:us-nj", "region:us-west"].map((domain) => ({ domain, kind: "site_destruction" as const })), deadlineSec: 3600, required: americasRequired, destination: "s-eu" },
      ],
      timelines: [],
    }),
  });
  t.context.defer(() => d.stop());
  return d;
}

async function writeSome(d: Deployment, n: number): Promise<number> {
  for (let i = 0; i < n; i++) await d.writer.write((i * 7) % BLOCKS, blockData(900 + i));
  return (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
}

const retainedAtEurope = (d: Deployment) => d.holders.get("h-eu")!.holder.lane(d.volume, LANE)!.retained;
const status = (d: Deployment): VolumeStatus | undefined => d.controller.status();

test.serial("over the spend ceiling an optional scenario's coverage copy is refused, counted and listed in `custody status`; nothing is copied", async (t) => {
  const d = await deployWith(t, "vol-sp-opt", false, 1);
  const head = await writeSome(d, 40);
  const deferredSeqs = () => RangeSet.from((status(d)?.spend?.deferred[0]?.seqs ?? "").split(",").filter(Boolean).map((r) => { const [a, b] = r.split("-").map(Number); return [a!, b ?? a!] as [number, number]; }));
  await eventually(() => deferredSeqs().coversAll(RangeSet.of(1, head)), "the optional copy of every write is deferred", 15_000, () => JSON.stringify(status(d)?.spend));
  const c = d.controller.counters;
  t.true(c.get("spend_optional_refused.spend_ceiling") >= 1);
  t.is(c.get("coverage_copy_started"), 0, "no copy was started");
  t.true(retainedAtEurope(d).isEmpty, `h-eu retains ${retainedAtEurope(d)}`);
  const deferred = status(d)!.spend!.deferred[0]!;
  t.like(deferred, { target: "h-eu", lane: LANE, reason: "spend_ceiling", scenarios: [AMERICAS] });
  t.true(status(d)!.spend!.overCeiling, "the plan alone ($20) is over the $1 ceiling");
  const americas = status(d)!.scenarios.find((s) => s.name === AMERICAS)!;
  t.is(americas.lostSeqs, head, "the optional scenario is left uncovered, and the report says so");
  const required = status(d)!.scenarios.find((s) => s.required)!;
  t.is(required.verdict, "met");

  const url = d.urls["us-east"]!;
  const json = JSON.parse((await custody(["status", d.volume, "--server", url, "--json"])).stdout.trim().split("\n").at(-1)!) as VolumeStatus;
  t.is(json.spend?.ceilingUsd, 1);
  t.true((json.spend?.refusedOptional ?? 0) >= 1);
  const table = (await custody(["status", d.volume, "--server", url])).stdout;
  t.regex(table, /OVER CEILING/);
  t.regex(table, new RegExp(`deferred optional copy ${LANE}:.* -> h-eu \\(${AMERICAS}\\): spend_ceiling`));
});

test.serial("with room under the ceiling the same optional copy runs and is charged to the repair budget", async (t) => {
  const d = await deployWith(t, "vol-sp-room", false, 1_000);
  const head = await writeSome(d, 40);
  await eventually(() => retainedAtEurope(d).coversAll(RangeSet.of(1, head)), "h-eu holds the copy", 20_000, () => `h-eu ${retainedAtEurope(d)}`);
  const c = d.controller.counters;
  t.true(c.get("spend_optional_admitted") >= 1);
  t.is(c.get("spend_optional_refused"), 0);
  await eventually(() => (status(d)?.spend?.budgets.find((b) => b.kind === "repair")?.spentUsd ?? 0) > 0, "the copy's cost is in the repair budget", 5_000);
  t.false(status(d)!.spend!.overCeiling);
});

test.serial("a ceiling never weakens a required scenario: under a ceiling it is over, the required copy still runs and the status says the period is over", async (t) => {
  const d = await deployWith(t, "vol-sp-req", true, 1);
  const head = await writeSome(d, 40);
  await eventually(() => retainedAtEurope(d).coversAll(RangeSet.of(1, head)), "h-eu holds the copy", 20_000, () => `h-eu ${retainedAtEurope(d)}`);
  const c = d.controller.counters;
  t.true(c.get("spend_required_admitted") >= 1);
  t.is(c.get("spend_optional_refused"), 0);
  await eventually(() => status(d)?.scenarios.find((s) => s.name === AMERICAS)?.verdict === "met", "the required scenario is met", 10_000, () => JSON.stringify(status(d)?.scenarios.find((s) => s.name === AMERICAS)));
  t.true(status(d)!.spend!.overCeiling);
});
