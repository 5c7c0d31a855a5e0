import { operatorCommit } from "../kit/operator-commit.ts";
import anyTest, { type TestFn } from "ava";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { CONTROL_HEAD_FILE, readControlLogHead } from "../../actors/runtime/control-log-head.ts";
import type { ControllerRoleConfig } from "../../actors/runtime/role-config.ts";
import { runController } from "../../actors/runtime/run-controller.ts";
import { controlStreamName, initJetStreamControlLog, openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import type { NatsConnection } from "../../transport/nats-connection.ts";
import { admit, createOb, who } from "../custody/control-fixtures.ts";
import { eventually } from "../e2e/e2e-fixture.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";
import { withNatsServerAndClient, type NatsClientTestContext } from "../kit/nats-test-context.ts";
import { topology } from "./secured-deployment.ts";
import { custodyCommand } from "../kit/custody-command.ts";

const test = anyTest as TestFn<NatsClientTestContext>;
withNatsServerAndClient(test, "integrity");
const run = promisify(execFile);

async function streamExists(nc: NatsConnection, region: string): Promise<boolean> {
  const jsm = await jetstreamManager(nc);
  return jsm.streams.info(controlStreamName(region)).then(
    () => true,
    () => false,
  );
}

test.serial("opening a control log never creates its stream: a missing one is control_log_missing and is still missing afterwards", async (t) => {
  const { nc } = t.context;
  await t.throwsAsync(openJetStreamControlLog(nc, { region: "never" }), { code: "control_log_missing" });
  t.false(await streamExists(nc, "never"));
});

test.serial("`custody log init` creates the control stream once; a second init finds it and changes nothing", async (t) => {
  const c = custodyCommand(["log", "init", "--server", t.context.nats.url, "--region", "boot", "--json"]);
  const cli = async () => JSON.parse((await run(c.command, c.args, { cwd: process.cwd() })).stdout.trim().split("\n").at(-1)!) as { created: boolean; lastSeq: number; stream: string };
  const first = await cli();
  t.like(first, { created: true, lastSeq: 0, stream: controlStreamName("boot") });
  const store = await openJetStreamControlLog(t.context.nc, { region: "boot" });
  await commitControlEvent(store, new ControlLogFollower(store), who("ctl"), () => admit("h1"));
  await store.close();
  t.like(await cli(), { created: false, lastSeq: 1 });
});

/** Asserts the controller refuses to start with `code`; one that starts anyway is stopped (the test fails). */
async function refusesToStart(t: { is(a: unknown, b: unknown, m?: string): void }, cfg: ControllerRoleConfig, code: string): Promise<void> {
  const r = await runController(cfg).then(
    async (running) => {
      await running.stop();
      return "started";
    },
    (err: unknown) => (err as { code?: string }).code,
  );
  t.is(r, code, `the controller refuses with ${code}`);
}

function controllerConfig(region: string, stateDir: string): ControllerRoleConfig {
  return { role: "controller", nats: { servers: "", maxReconnectAttempts: 0 }, stateDir, controller: { controllerId: "c1", region, topology: topology(), evalIntervalMs: 50 } };
}

test.serial("a controller persists the control-log head it verified and, restarted, refuses a log that vanished, regressed or forked since", async (t) => {
  const { nc } = t.context;
  const region = "guard";
  const dir = tempDir("custody-ctl-state-");
  const cfg = { ...controllerConfig(region, dir), nats: { servers: t.context.nats.url, maxReconnectAttempts: 0 } };
  // No bootstrap, no controller: it does not create the stream either.
  await refusesToStart(t, cfg, "control_log_missing");
  t.false(await streamExists(nc, region));

  const { log } = await initJetStreamControlLog(nc, { region });
  const first = await runController(cfg);
  for (const h of ["h1", "h2", "relay"]) await operatorCommit(log, admit(h));
  await operatorCommit(log, createOb("vol-l0", ["h1", "h2"]));
  await eventually(() => first.controller.controlState().lastSeq === 4, "the controller folded the operator's four entries");
  const verified = first.controller.controlState();
  await first.stop();
  t.deepEqual(await readControlLogHead(nodeFileLayer, dir, region), { region, seq: verified.lastSeq, hash: verified.headHash }, "the head is in the state directory");

  // The same log: the controller starts and goes on.
  const again = await runController(cfg);
  await again.stop();

  // The stream vanished.
  const jsm = await jetstreamManager(nc);
  await log.close();
  await jsm.streams.delete(controlStreamName(region));
  await refusesToStart(t, cfg, "control_log_missing");

  // Recreated (empty, then shorter than the head): a regression.
  const { log: rebuilt } = await initJetStreamControlLog(nc, { region });
  await refusesToStart(t, cfg, "log_regression");
  const other = new ControlLogFollower(rebuilt);
  await commitControlEvent(rebuilt, other, who("rogue"), () => admit("h1", 7, "rogue/domain"));
  await refusesToStart(t, cfg, "log_regression");

  // Grown back to the head's length with a different history: a fork.
  while (other.state.lastSeq < verified.lastSeq) await commitControlEvent(rebuilt, other, who("rogue"), () => admit("h1", 8 + other.state.lastSeq, "rogue/domain"));
  await refusesToStart(t, cfg, "log_fork");
  await rebuilt.close();
  t.deepEqual(await readControlLogHead(nodeFileLayer, dir, region), { region, seq: verified.lastSeq, hash: verified.headHash }, "a refused start leaves the verified head as it was");
  t.true(existsSync(join(dir, CONTROL_HEAD_FILE)));
});

test.serial("a damaged head file is refused, never taken for an empty state", async (t) => {
  const dir = tempDir("custody-ctl-state-");
  const { writeFileSync } = await import("node:fs");
  writeFileSync(join(dir, CONTROL_HEAD_FILE), JSON.stringify({ head: { region: "x", seq: 5, hash: "0".repeat(64) }, crc: 1 }));
  await t.throwsAsync(readControlLogHead(nodeFileLayer, dir, "x"), { code: "control_head_damaged" });
});
