import anyTest, { type TestFn } from "ava";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { readControlLogHead } from "../../actors/runtime/control-log-head.ts";
import { controllerRoleSchema, type ControllerRoleConfig } from "../../actors/runtime/role-config.ts";
import { listProcesses } from "../../actors/runtime/process-stats.ts";
import { runController } from "../../actors/runtime/run-controller.ts";
import { initJetStreamControlLog, openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import type { NatsConnection } from "../../transport/nats-connection.ts";
import { admit } from "../custody/control-fixtures.ts";
import { operatorCommit } from "../kit/operator-commit.ts";
import { eventually } from "../e2e/e2e-fixture.ts";
import type { HolderAdmission } from "../../actors/index.ts";
import type { ControlEventBody } from "../../custody/index.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";
import { withNatsServerAndClient, type NatsClientTestContext } from "../kit/nats-test-context.ts";
import { topology } from "../security/secured-deployment.ts";

const test = anyTest as TestFn<NatsClientTestContext>;
withNatsServerAndClient(test, "ctl-log-region");

function controllerConfig(url: string, id: string, stateDir: string, controlLogRegion?: string): ControllerRoleConfig {
  return controllerRoleSchema.parse({
    role: "controller",
    nats: { servers: url, maxReconnectAttempts: 0 },
    stateDir,
    ...(controlLogRegion !== undefined ? { controlLogRegion } : {}),
    // No lanes: `bootstrap` then commits only the admissions it is given.
    controller: { controllerId: id, region: "east", topology: { ...topology(), lanes: [] }, evalIntervalMs: 50 },
  });
}

/** `admit(h)` as the admission a controller's bootstrap commits. */
function admission(h: string): HolderAdmission {
  const e = admit(h) as Extract<ControlEventBody, { type: "admit_holder" }>;
  return { holderId: e.holderId, incarnation: e.incarnation, publicKey: e.publicKey, failureDomain: e.failureDomain };
}

/** Every entry of a control log, folded by a fresh follower. */
async function entries(nc: NatsConnection, region: string): Promise<number> {
  const store = await openJetStreamControlLog(nc, { region });
  try {
    const f = new ControlLogFollower(store);
    await f.refresh();
    return f.state.lastSeq;
  } finally {
    await store.close();
  }
}

test.serial("two controllers in one region commit to the control logs their configs name, each leaving the other's log untouched", async (t) => {
  const { nc } = t.context;
  await initJetStreamControlLog(nc, { region: "east-vol-a" });
  await initJetStreamControlLog(nc, { region: "east-vol-b" });
  const dirA = tempDir("custody-ctl-a-");
  const dirB = tempDir("custody-ctl-b-");
  const a = await runController(controllerConfig(t.context.nats.url, "ctl-a", dirA, "east-vol-a"));
  t.teardown(() => a.stop());
  const b = await runController(controllerConfig(t.context.nats.url, "ctl-b", dirB, "east-vol-b"));
  t.teardown(() => b.stop());
  await a.controller.bootstrap([admission("h1"), admission("h2")], []);
  await b.controller.bootstrap([admission("relay")], []);
  t.is(await entries(nc, "east-vol-a"), 2);
  t.is(await entries(nc, "east-vol-b"), 1);
  await a.stop();
  // The persisted head is keyed by the log's region token, not the controller's region.
  t.is((await readControlLogHead(nodeFileLayer, dirA, "east-vol-a"))?.seq, 2);
});

test.serial("without controlLogRegion a controller opens its own region's log, and refuses to start when only the named logs exist", async (t) => {
  const err = await runController(controllerConfig(t.context.nats.url, "ctl-c", tempDir("custody-ctl-c-"))).then(
    async (r) => {
      await r.stop();
      return undefined;
    },
    (e: unknown) => e as { code?: string; message?: string },
  );
  t.is(err?.code, "control_log_missing");
  t.regex(err?.message ?? "", /CUSTODY_CTRL_east\b/);
});

test("a controller config with an empty controlLogRegion is refused", (t) => {
  t.false(controllerRoleSchema.safeParse({ role: "controller", nats: { servers: "x" }, controlLogRegion: "", controller: {} }).success);
});

test.serial("regression attack-row stall: a controller's `evaluations` figure is a running total, so two stats reads never see it go down", async (t) => {
  const { nc } = t.context;
  await initJetStreamControlLog(nc, { region: "east-vol-e" });
  const c = await runController(controllerConfig(t.context.nats.url, "ctl-e", tempDir("custody-ctl-e-"), "east-vol-e"));
  t.teardown(() => c.stop());
  await c.controller.bootstrap([admission("h1")], []);
  const evaluations = async () => {
    const { stats } = await listProcesses(nc, { waitMs: 300 });
    return stats.find((p) => p.role === "controller" && p.id === "ctl-e")?.figures["evaluations"] ?? -1;
  };
  // Stats reads used to drain the evaluation window, so a reader that compared two reads saw the count fall.
  const seen: number[] = [];
  for (let i = 0; i < 6; i++) {
    seen.push(await evaluations());
    await new Promise((r) => setTimeout(r, 150));
  }
  t.true(seen.every((v, i) => i === 0 || v >= seen[i - 1]!), `evaluations read: ${seen.join(", ")}`);
  t.true(seen.at(-1)! <= c.controller.counters.get("evaluations"), "the figure is the controller's own total, read a moment earlier");
  t.true(seen.at(-1)! > 0, "the controller evaluated");
});

test.serial("regression quiet-controller: with no receipt or holder to wake it, a controller folds what an operator committed to its log", async (t) => {
  const { nc } = t.context;
  const { log } = await initJetStreamControlLog(nc, { region: "east-vol-q" });
  const c = await runController(controllerConfig(t.context.nats.url, "ctl-q", tempDir("custody-ctl-q-"), "east-vol-q"));
  t.teardown(() => c.stop());
  await operatorCommit(log, admit("h1"));
  await operatorCommit(log, { type: "declare_failure", scope: "holder", domain: "aws/us-east-1/az-h1", holderIds: ["h1"] });
  await eventually(() => c.controller.controlState().holders["h1"]?.status === "failed", "the controller saw the operator's two entries", 10_000);
  t.is(c.controller.controlState().lastSeq, 2);
});
