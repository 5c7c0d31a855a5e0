/**
 * A deployment `custody init` writes has a signed control log: `custody bootstrap` signs with the
 * operator's key and admits the controller's, and every reader trusts only the operator key each
 * role config names. An operator command with the operator's NATS credentials but without its key
 * reaches the stream but changes nothing for those readers; with the key it does.
 */
import test from "ava";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ControlFenceCode } from "../../custody/control-error.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { operatorConnectOptions } from "../../cli/operator-connection.ts";
import { loadControlTrust } from "../../actors/runtime/control-trust-files.ts";
import { controllerRoleSchema, readRoleConfig } from "../../actors/runtime/role-config.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import type { DeployedProcess } from "../kit/deployed-process.ts";
import { initAndStartNats } from "../kit/index.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

test("custody bootstrap signs the control log with the operator's key; an admission without that key changes nothing for the roles' readers, one with it does", async (t) => {
  const started: DeployedProcess[] = [];
  t.teardown(async () => {
    for (const p of started) if (p.running) await p.signal("SIGKILL", 10_000);
  });
  const { out, index } = await initAndStartNats(custody, () => tempDir("custody-deploy-"), { metrics: true }, (p) => started.push(p));
  const url = index.natsServers.find((s) => s.region === "east")!.url;
  const boot = JSON.parse(await custody(["bootstrap", join(out, "bootstrap.json"), "--server", url, "--json"])) as { controllers: string[]; admitted: string[] };
  t.deepEqual(boot.controllers, ["ctl-1"], "the operator admitted the controller's signing key");
  t.deepEqual(boot.admitted, ["h-e1", "h-w1"]);

  // A reader that trusts exactly what the controller's role config says.
  const ctlRole = index.roles.find((r) => r.role === "controller")!;
  const { trust } = loadControlTrust(readRoleConfig(ctlRole.config, controllerRoleSchema).controlTrust);
  t.truthy(trust, "init wrote a controlTrust section");
  // The test reads the log as the operator principal (the bus is secured).
  const asOperator = ["--operator-config", join(out, "operator", "nats.json")];
  const nc = await connectNats({ ...operatorConnectOptions({ server: url, operatorConfig: asOperator[1]! }, "signed-log-test"), maxReconnectAttempts: 0 });
  t.teardown(() => closeNats(nc));
  const store = await openJetStreamControlLog(nc, { region: "ctl" });
  const reader = new ControlLogFollower(store, undefined, trust);
  t.is((await reader.refresh()).holders["h-e1"]?.incarnation, 1);

  const rogueKey = Buffer.from(generateHolderKeyPair().publicKey).toString("hex");
  const admit = (extra: string[]) => custody(["holder", "admit", "--server", url, "--region", "ctl", "--holder", "h-e1", "--incarnation", "7", "--public-key", rogueKey, "--failure-domain", "east/az1/evil", "--json", ...asOperator, ...extra]);
  // Another process commits: the reader reads through the stream's head (a standing tail may lag).
  const refreshed = () => reader.refreshToHead();
  await admit([]);
  const afterRogue = await refreshed();
  t.is(afterRogue.holders["h-e1"]?.incarnation, 1, "an unsigned admission is skipped");
  t.is(afterRogue.rejected.at(-1)?.code, ControlFenceCode.unsigned_event);

  const wrongKey = join(out, `wrong-${randomBytes(3).toString("hex")}.key`);
  writeFileSync(wrongKey, generateHolderKeyPair().privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  await admit(["--operator-key", wrongKey]);
  t.is((await refreshed()).rejected.at(-1)?.code, ControlFenceCode.bad_signature, "a key that is not the operator's does not verify");
  t.is(reader.state.holders["h-e1"]?.incarnation, 1);

  await admit(["--operator-key", join(out, "operator", "operator.key")]);
  t.is((await refreshed()).holders["h-e1"]?.incarnation, 7, "the operator's signed admission counts");
  t.is(reader.distrusted, undefined);
  await store.close();
});
