import anyTest, { type TestFn } from "ava";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gatherProcessStats } from "../../actors/runtime/process-stats.ts";
import { holderRoleSchema, readRoleConfig, type NatsRoleConfig } from "../../actors/runtime/role-config.ts";
import { connectRole } from "../../actors/runtime/connect.ts";
import { runHolder } from "../../actors/runtime/run-holder.ts";
import { writeHolderRole } from "../kit/index.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { site } from "../e2e/e2e-fixture.ts";
import { startSecuredBus, type SecuredBus } from "./secured-bus.ts";

const REGION = "cfg";
const test = anyTest as TestFn<{ bus: SecuredBus }>;

test.before(async (t) => {
  t.context.bus = await startSecuredBus([
    { key: "h9", role: "holder", id: "h9", scope: { controlRegion: REGION, lanes: [{ volume: "v9", lane: "l0", downstream: [] }] } },
    { key: "op", role: "operator", id: "op", scope: {} },
  ]);
  const op = await t.context.bus.connect("op");
  await (await initJetStreamControlLog(op.transport.connection, { region: REGION })).log.close();
});
test.after.always(async (t) => {
  await t.context.bus?.stop();
});

function securedNats(bus: SecuredBus, key: string): NatsRoleConfig {
  const p = bus.principals.get(key)!;
  return { servers: bus.url, maxReconnectAttempts: 0, credentials: { nkeySeedFile: p.seedFile, inboxPrefix: p.permissions.inboxPrefix }, tls: { caFile: bus.caFile } };
}

test.serial("a holder started from a role config whose nats section names its seed file, inbox prefix and CA runs on the secured bus and answers the operator's ps request", async (t) => {
  const bus = t.context.bus;
  const dir = mkdtempSync(join(tmpdir(), "custody-sec-role-"));
  const { file } = writeHolderRole(dir, { id: "h9", site: site("s9", "us-east", "use1-az1"), nats: securedNats(bus, "h9"), volume: "v9", lane: "l0", upstream: ["w9"], downstream: [], disk: false }, REGION);
  const cfg = readRoleConfig(file, holderRoleSchema);
  const running = await runHolder(cfg);
  t.teardown(() => running.stop());
  const op = await bus.connect("op", "op-ps");
  const { stats } = await gatherProcessStats(op.transport.connection, { role: "holder", waitMs: 1000 });
  t.deepEqual(
    stats.map((s) => s.id),
    ["h9"],
    "the holder answered under allow_responses, into the operator's own inbox",
  );
  t.deepEqual(op.violations, []);
});

test.serial("the nats section is strict: an unknown credentials key is refused naming its path", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-sec-role-"));
  const { file } = writeHolderRole(dir, { id: "h9", site: site("s9", "us-east", "use1-az1"), nats: securedNats(t.context.bus, "h9"), volume: "v9", lane: "l0", upstream: ["w9"], downstream: [], disk: false }, REGION);
  const raw = JSON.parse(readFileSync(file, "utf8"));
  raw.nats.credentials.password = "x";
  writeFileSync(file, JSON.stringify(raw));
  t.throws(() => readRoleConfig(file, holderRoleSchema), { code: "invalid_role_config", message: /unknown key nats\.credentials\.password/ });
});

test.serial("a role whose seed file others can read does not connect", async (t) => {
  const bus = t.context.bus;
  const nats = securedNats(bus, "h9");
  const copy = join(mkdtempSync(join(tmpdir(), "custody-sec-role-")), "h9.nk");
  writeFileSync(copy, readFileSync(nats.credentials!.nkeySeedFile), { mode: 0o600 });
  chmodSync(copy, 0o640);
  await t.throwsAsync(connectRole({ ...nats, credentials: { nkeySeedFile: copy } }, "h9-loose"), { code: "bad_credentials" });
});
