/**
 * `custody init` refuses a deployment whose required scenario destroys the control plane (the
 * control log's quorum, every controller of a volume, or its key authority) unless the operator
 * passes --allow-control-plane-loss; the controllers' topology carries where the control plane runs.
 */
import test from "ava";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCliCaptured } from "../../cli/program.ts";
import { controlPlaneLosses, parseDeployment } from "../../policies/deploy/index.ts";
import { loopbackDeployment } from "../kit/index.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

const EAST_LOST = { scenarios: [{ name: "east lost", losses: [{ domain: "region:east", kind: "site_destruction" }], deadlineSec: 900, required: true }] };

async function deploymentFile(o: Parameters<typeof loopbackDeployment>[1]) {
  const dir = tempDir("custody-init-cp-");
  const d: Record<string, unknown> = { ...(await loopbackDeployment(dir, o)), security: "none" };
  const file = join(dir, "deployment.json");
  writeFileSync(file, JSON.stringify(d));
  return { dir, file, d };
}

test("a required scenario that takes the only controller's region (and the single-replica log there) is refused, naming the scenario and each role; the override writes it with a warning", async (t) => {
  const { dir, file } = await deploymentFile({ volumeExtras: EAST_LOST });
  const r = await runCliCaptured(["init", file, "--out", join(dir, "out")]);
  t.is(r.code, 1);
  t.is(
    r.stderr.trim(),
    'error [control_plane_lost]: required scenario "east lost" of vol-d destroys the quorum of control log ctl (0 of 1 replicas survive, 1 needed: ctl:east in east); every controller of vol-d (ctl-1 in east); replicate the control log across 3 regions (controlLog.replicas 3, or put the losses outside two of its first three regions), add a standby controller in another region or pass --allow-control-plane-loss',
  );
  const allowed = await runCliCaptured(["init", file, "--out", join(dir, "out"), "--allow-control-plane-loss", "--json"]);
  t.is(allowed.code, 0, allowed.stderr);
  t.regex(allowed.stderr, /^warning: control_plane_lost allowed: required scenario "east lost" of vol-d destroys the quorum/m);
  // The controller evaluates it too: its status shows the scenario NOT MET, control_plane_lost.
  const ctl = JSON.parse(readFileSync(join(dir, "out", "roles", "controller-ctl-1", "config.json"), "utf8")) as { controller: { topology: { controlPlane: unknown } } };
  t.deepEqual(ctl.controller.topology.controlPlane, { version: 1, log: "ctl", logReplicas: [{ id: "ctl:east", region: "east" }], controllers: [{ id: "ctl-1", region: "east" }] });
});

test("three regions (a replicated log) and a standby controller in west: the same scenario keeps the control plane, init writes it without a word", async (t) => {
  const { dir, file, d } = await deploymentFile({ volumeExtras: EAST_LOST, extraRegions: ["north"], standbyController: true });
  t.deepEqual(controlPlaneLosses(parseDeployment(d)), []);
  const r = await runCliCaptured(["init", file, "--out", join(dir, "out")]);
  t.is(r.code, 0, r.stderr);
  t.notRegex(r.stderr, /control_plane_lost/);
  // Without the standby, only the controller is lost (2 of 3 replicas survive).
  const alone = parseDeployment({ ...d, controllers: (d["controllers"] as { id: string }[]).filter((c) => c.id === "ctl-1") });
  t.deepEqual(controlPlaneLosses(alone).map((l) => [l.scenario, l.roles]), [["east lost", ["controller"]]]);
  // A scenario that takes the recovery site loses the key authority.
  const vault = parseDeployment({ ...d, volumes: (d["volumes"] as object[]).map((v) => ({ ...v, scenarios: [{ name: "vault lost", losses: [{ domain: "site:s-vault", kind: "site_destruction" }], deadlineSec: 900, required: true }] })) });
  t.deepEqual(controlPlaneLosses(vault).map((l) => [l.scenario, l.roles]), [["vault lost", ["key authority"]]]);
  // ...unless the key is escrowed at a site the scenario keeps (volumes[].keyAuthorities); a scenario may then recover elsewhere.
  const escrowed = parseDeployment({ ...vault, volumes: vault.volumes.map((v) => ({ ...v, keyAuthorities: ["s-vault", "s-w1"], scenarios: v.scenarios!.map((x) => ({ ...x, destination: "s-w1" })) })) });
  t.deepEqual(controlPlaneLosses(escrowed), []);
  t.throws(() => parseDeployment({ ...d, volumes: (d["volumes"] as object[]).map((v) => ({ ...v, keyAuthorities: ["nowhere"] })) }), { message: /volumes\.0\.keyAuthorities\.0: unknown site nowhere/ });
  // Optional scenarios are never refused.
  const optional = parseDeployment({ ...alone, volumes: alone.volumes.map((v) => ({ ...v, scenarios: v.scenarios!.map((s) => ({ ...s, required: false })) })) });
  t.deepEqual(controlPlaneLosses(optional), []);
});
