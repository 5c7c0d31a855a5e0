import test from "ava";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { evaluateState, parseEvaluationState, PolicyInputError } from "../../policies/index.ts";
import { runCliCaptured } from "../../cli/program.ts";
import { EAST_AND_WEST, exampleJson } from "./worked-example-fixture.ts";

const dir = mkdtempSync(join(tmpdir(), "custody-control-plane-"));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

/** The worked example with every required scenario met on its data (as policy-cli.test.ts makes it), plus `controlPlane`. */
function exampleWith(controlPlane: unknown): any {
  const j = exampleJson();
  for (const sc of j.scenarios) if (sc.name === "US-East lost" || sc.name === EAST_AND_WEST) sc.allowedLoss = { seqs: 2, ageSec: 60 };
  j.metadataQuorum.quorum = 1;
  if (controlPlane !== undefined) j.controlPlane = controlPlane;
  return j;
}

/** Three control-log replicas (us-east, us-west, eu-west) and controllers in the regions given. */
const replicated = (controllers: [string, string][]) => ({
  version: 1,
  log: "ctl",
  logReplicas: [
    { id: "control-ctl-us-east", region: "us-east" },
    { id: "control-ctl-us-west", region: "us-west" },
    { id: "control-ctl-eu-west", region: "eu-west" },
  ],
  controllers: controllers.map(([id, region]) => ({ id, region })),
});

const report = (j: unknown, name: string) => evaluateState(parseEvaluationState(j)).reports.find((r) => r.name === name)!;

test("a state without controlPlane evaluates as before: no control-plane finding, no such reason", (t) => {
  const r = evaluateState(parseEvaluationState(exampleWith(undefined)));
  for (const x of r.reports) {
    t.is(x.controlPlane, undefined);
    t.false(x.flags.includes("control_plane_lost"));
  }
  t.deepEqual(r.reports.filter((x) => x.required).map((x) => x.verdict), r.reports.filter((x) => x.required).map(() => "met"));
});

test("one region lost keeps 2 of 3 control replicas and a standby controller in another region: met; two regions lose the quorum: control_plane_lost naming it", (t) => {
  const j = exampleWith(replicated([["ctl-east", "us-east"], ["ctl-eu", "eu-west"]]));
  const east = report(j, "US-East lost");
  t.is(east.verdict, "met", east.reasons.join("; "));
  t.deepEqual(east.controlPlane, { logReplicas: { surviving: ["control-ctl-us-west", "control-ctl-eu-west"], of: 3, quorum: 2 }, controllers: ["ctl-eu"], keyAuthority: true, lost: [], reason: null });
  const both = report(j, EAST_AND_WEST);
  t.is(both.verdict, "not_met");
  t.deepEqual(both.controlPlane!.lost, ["quorum"]);
  t.true(both.flags.includes("control_plane_lost"));
  t.deepEqual(both.reasons, ["control_plane_lost: destroys the quorum of control log ctl (1 of 3 replicas survive, 2 needed: control-ctl-us-east in us-east, control-ctl-us-west in us-west, control-ctl-eu-west in eu-west)"]);
});

test("every controller of the volume in the lost region: control_plane_lost names the controller; a crash or a power loss takes nothing out", (t) => {
  const j = exampleWith(replicated([["ctl-east", "us-east"], ["ctl-east-b", "us-east"]]));
  const east = report(j, "US-East lost");
  t.is(east.verdict, "not_met");
  t.deepEqual(east.controlPlane!.lost, ["controller"]);
  t.deepEqual(east.reasons, ["control_plane_lost: destroys every controller of vol-orders (ctl-east in us-east, ctl-east-b in us-east)"]);
  // Processes restart after a power loss; a replica's disk is kept.
  const power = report(j, "US-East power loss");
  t.deepEqual(power.controlPlane!.lost, []);
  t.deepEqual(power.controlPlane!.controllers, ["ctl-east", "ctl-east-b"]);
  // A controller placed at a site is reached by that site's AZ too; a `controller:<id>` loss reaches it by name.
  j.controlPlane.controllers = [{ id: "ctl-az", region: "us-east", site: "use1-writer" }];
  t.deepEqual(report(j, "AZ use1-az1 lost").controlPlane!.lost, ["controller"]);
  j.controlPlane.controllers = [{ id: "ctl-eu", region: "eu-west" }];
  j.scenarios.push({ name: "controller gone", losses: [{ domain: "controller:ctl-eu", kind: "site_destruction" }], deadlineSec: 600, required: false });
  t.deepEqual(report(j, "controller gone").controlPlane!.lost, ["controller"]);
});

test("a single-replica log in the lost region loses the quorum; with every key authority gone the reason names the key authority", (t) => {
  const j = exampleWith({ version: 1, log: "ctl", logReplicas: [{ id: "ctl:us-east", region: "us-east" }], controllers: [{ id: "ctl-eu", region: "eu-west" }] });
  t.deepEqual(report(j, "US-East lost").controlPlane!.lost, ["quorum"]);
  j.scenarios.push({ name: "both vaults", losses: [{ domain: "site:use1-writer", kind: "site_destruction" }, { domain: "site:euw1-store", kind: "site_destruction" }], deadlineSec: 600, required: true });
  const r = report(j, "both vaults");
  // Two sites of us-east and eu-west go, not the region: the replica known only by its region stays.
  t.deepEqual(r.controlPlane!.lost, ["key authority"]);
  t.is(r.reasons.at(-1), "control_plane_lost: destroys every key authority of vol-orders (kms-us-east at use1-writer, kms-eu-west at euw1-store)");
  t.true(r.reasons.includes("no key authority survives"));
});

test("controlPlane is versioned and its sites are checked", (t) => {
  t.throws(() => parseEvaluationState(exampleWith({ ...replicated([]), version: 2 })), { instanceOf: PolicyInputError, message: /controlPlane\.version/ });
  t.throws(() => parseEvaluationState(exampleWith({ ...replicated([]), controllers: [{ id: "c", region: "r", site: "nowhere" }] })), { message: /controlPlane\.controllers\[0\]\.site/ });
});

test("custody evaluate exits 3 when a required scenario destroys the control quorum, saying control_plane_lost", async (t) => {
  const file = join(dir, "control-plane.json");
  writeFileSync(file, JSON.stringify(exampleWith(replicated([["ctl-east", "us-east"], ["ctl-eu", "eu-west"]]))));
  const r = await runCliCaptured(["evaluate", file]);
  t.is(r.code, 3);
  t.regex(r.stderr, /^contract not met: US-East and US-West lost \(control_plane_lost: destroys the quorum of control log ctl/);
  t.regex(r.stdout.split("\n").find((l) => l.startsWith(EAST_AND_WEST))!, /control_plane_lost.*NOT MET: control_plane_lost/);
  // The same file without controlPlane: every required scenario met.
  writeFileSync(file, JSON.stringify(exampleWith(undefined)));
  t.is((await runCliCaptured(["evaluate", file])).code, 0);
});
