import test from "ava";
import { readFileSync } from "node:fs";
import { DeploymentError, loadDeployment, parseDeployment, topologyOf } from "../../tools/demo/deployment.ts";
import { survivingCutAt } from "../../tools/demo/custody-timeline.ts";
import { formatScenarioTable, legRow, lostRange } from "../../tools/demo/scenario-table.ts";

const path = new URL("../../examples/deployment.json", import.meta.url).pathname;
const raw = () => JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown> & { holders: { site: string; downstream: string[] }[]; sites: { id: string; az: string }[] };

test("the example deployment loads: four regions, the memo's five holders, and the demo's four scenarios", (t) => {
  const d = loadDeployment(path);
  t.deepEqual(d.regions.map((r) => r.name), ["us-east", "us-west", "eu-central", "waypoint"]);
  t.is(d.holders.length, 5);
  const topo = topologyOf(d);
  t.deepEqual(topo.scenarios.map((s) => s.name), ["AZ use1-az1 lost", "us-east lost", "us-east and us-west lost"]);
  t.is(topo.timelines.length, 1);
  t.deepEqual(topo.releasable, ["h-e1", "h-e2"]);
  t.is(topo.links.length, (6 * 5) / 2, "a full mesh of links between the six sites");
});

test("a holder at an unknown site is refused with invalid_deployment naming the site", (t) => {
  const r = raw();
  r.holders[0]!.site = "s-nowhere";
  const err = t.throws(() => parseDeployment(r));
  t.true(err instanceof DeploymentError);
  t.is((err as DeploymentError).code, "invalid_deployment");
  t.regex(err!.message, /s-nowhere/);
});

test("a site in an AZ its region does not have is refused", (t) => {
  const r = raw();
  r.sites[0]!.az = "use1-az9";
  t.throws(() => parseDeployment(r), { instanceOf: DeploymentError, message: /no AZ use1-az9/ });
});

test("a name that cannot be a subject token and an unknown field are refused by the schema", (t) => {
  t.throws(() => parseDeployment({ ...raw(), volume: "vol.demo" }), { instanceOf: DeploymentError, message: /volume/ });
  t.throws(() => parseDeployment({ ...raw(), surprise: 1 }), { instanceOf: DeploymentError });
});

test("a downstream edge to an unknown holder is refused", (t) => {
  const r = raw();
  r.holders[2]!.downstream = ["h-ghost"];
  t.throws(() => parseDeployment(r), { instanceOf: DeploymentError, message: /h-ghost/ });
});

test("the surviving cut at a moment counts survivors contiguously from the newest surviving base", (t) => {
  const sample = { tMs: 100, acked: 50, holders: { a: { retained: [[1, 20]] as [number, number][], bytes: 0 }, b: { retained: [[31, 50]] as [number, number][], bytes: 0 } } };
  t.is(survivingCutAt(sample, { name: "lose a", lostHolders: ["a"] }, []), 0, "without a base, b's suffix alone recovers nothing");
  t.is(survivingCutAt(sample, { name: "lose a", lostHolders: ["a"] }, [{ holder: "b", cut: 30, fromMs: 50 }]), 50, "b's base at 30 plus its WAL 31..50");
  t.is(survivingCutAt(sample, { name: "lose a", lostHolders: ["a"] }, [{ holder: "b", cut: 30, fromMs: 200 }]), 0, "a base taken later does not count yet");
  t.is(survivingCutAt(sample, { name: "lose b", lostHolders: ["b"] }, [{ holder: "b", cut: 30, fromMs: 50 }]), 20, "a lost holder's base is lost with it");
});

test("the scenario table shows lost ranges and unbounded RTOs, and a leg's monthly cost is rate x 30 days x price", (t) => {
  t.is(lostRange(116, 120), "117–120");
  t.is(lostRange(120, 120), "none");
  t.is(lostRange(null, 3), "1–3");
  const text = formatScenarioTable([
    { scenario: "x lost", required: true, predictedCut: 116, observedCut: 116, acknowledged: 120, lostRange: "117–120", rpoSeqs: 4, rpoBytes: 16384, rpoAgeMs: 12, rtoEstimateSec: null, rtoMeasuredSec: 0.5, contributors: [] },
  ]);
  t.regex(text, /x lost\s+yes\s+#116\s+#116\s+117–120\s+4 \/ 16384 B \/ 12 ms\s+unbounded\s+0\.50 s/);
  // The memo's arithmetic: 1 GB/s for 30 days at $0.02/GB is $51,840 per leg.
  t.is(Math.round(legRow("a", "b", 0.02, 1e9).monthlyUsd), 51_840);
});
