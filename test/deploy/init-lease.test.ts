/**
 * Standby controllers in `custody init` (issue #45): a volume named by two controllers gets both a
 * role config with a `lease` section, both admitted by the bootstrap for the volume, and NATS
 * permissions that differ only by the principal's own id; a volume with one controller gets no
 * lease (it runs as before and never claims).
 */
import test from "ava";
import { planDeployment, type KeySource } from "../../policies/deploy/deployment-plan.ts";
import { deploymentPrincipals } from "../../policies/deploy/deployment-security.ts";
import { parseDeployment } from "../../policies/deploy/deployment-check.ts";
import { controllerRoleSchema } from "../../actors/runtime/role-config.ts";
import { permissionsFor } from "../../transport/security/principal-permissions.ts";
import { loopbackDeployment } from "../kit/index.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

const keys: KeySource = { holderKey: () => ({ pkcs8: new Uint8Array([1]), publicRaw: new Uint8Array(32).fill(1) }), dataKey: () => new Uint8Array(32).fill(0xdd) };

async function plan(standbyController: boolean) {
  const d = parseDeployment(await loopbackDeployment(tempDir("custody-plan-"), { standbyController }));
  let u = 0;
  const p = planDeployment(d, "/out", keys, { nkeyUser: () => ({ seed: `SU${++u}`, publicKey: `U${String.fromCharCode(65 + u).repeat(55)}` }), caPem: "CA\n" });
  const config = (id: string) => controllerRoleSchema.parse(JSON.parse(p.files.find((f) => f.path === `/out/roles/controller-${id}/config.json`)!.contents as string));
  return { d, p, config };
}

test("two controllers of one volume: both get a lease section, both are admitted for the volume, with the same permissions but for their own id", async (t) => {
  const { d, p, config } = await plan(true);
  t.deepEqual(p.bootstrap.controllers.map((c) => [c.id, c.volumes]), [["ctl-1", ["vol-d"]], ["ctl-1b", ["vol-d"]]]);
  t.deepEqual(config("ctl-1").lease, { renewMs: 500, timeoutMs: 3_000, checkMs: 250 });
  t.deepEqual(config("ctl-1b").lease, { renewMs: 500, timeoutMs: 3_000, checkMs: 250 });
  const principals = deploymentPrincipals(d, "operator", () => []);
  const scope = (id: string) => principals.find((x) => x.instance === `controller-${id}`)!.spec;
  t.deepEqual(scope("ctl-1").scope, scope("ctl-1b").scope, "the standby may do exactly what the active one may");
  const norm = (id: string) => JSON.parse(JSON.stringify(permissionsFor("controller", id, scope(id).scope as never)).replaceAll(id, "<id>")) as unknown;
  t.deepEqual(norm("ctl-1b"), norm("ctl-1"));
});

test("a volume with one controller gets no lease: it runs at once and never claims", async (t) => {
  const { config } = await plan(false);
  t.is(config("ctl-1").lease, undefined);
});
