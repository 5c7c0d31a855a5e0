/**
 * A process never runs deaf: when its NATS connection closes for good (the server is gone and the
 * reconnect attempts run out), `custody run holder` prints one error line and exits 2, so a
 * supervisor restarts it (as a new incarnation).
 */
import test from "ava";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { STOP_DEADLINE_MS, stopWithin } from "../../cli/commands/run.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { custodyCommand } from "../kit/custody-command.ts";
import { startNatsServer } from "../kit/index.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";

/** The operator's bootstrap of the holder's control stream (holders never create it). */
async function bootstrapLog(servers: string, region: string): Promise<void> {
  const nc = await connectNats({ servers, name: "operator", maxReconnectAttempts: 0 });
  await (await initJetStreamControlLog(nc, { region })).log.close();
  await closeNats(nc);
}
import { e2eHolderConfig, site, tempDir } from "./e2e-fixture.ts";

test("a holder whose NATS connection closes for good exits 2 with connection_lost", async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  await bootstrapLog(server.url, "r-lost");
  const dir = tempDir("custody-lost-");
  const keyFile = join(dir, "h.key");
  writeFileSync(keyFile, generateHolderKeyPair().privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const holder = { ...e2eHolderConfig("h-lost", site("s-1", "r1", "az1"), "vol-lost", [{ lane: "l0", upstream: ["w1"] }]), incarnation: undefined };
  const cfg = { role: "holder", nats: { servers: server.url, maxReconnectAttempts: 2, reconnectTimeWaitMs: 200 }, controlRegion: "r-lost", stateDir: join(dir, "state"), keyFile, holder };
  writeFileSync(join(dir, "h.json"), JSON.stringify(cfg));
  const c = custodyCommand(["run", "holder", "--config", join(dir, "h.json")]);
  const child = spawn(c.command, c.args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr!.on("data", (b) => (stderr += String(b)));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (b) => String(b).includes('"ready":true') && resolve());
    void exited.then((code) => reject(new Error(`exited ${code} before ready: ${stderr}`)));
  });
  await server.stop();
  t.is(await exited, 2);
  t.regex(stderr, /connection_lost/);
});

test("a role's stop is bounded: one that hangs (its servers gone, a write waiting on backpressure) ends at the deadline; one that finishes or fails is done", async (t) => {
  t.false(await stopWithin(() => new Promise<void>(() => undefined), 50), "a stop that never finishes");
  t.true(await stopWithin(async () => undefined, 1_000));
  t.true(await stopWithin(() => Promise.reject(new Error("close failed")), 1_000), "a failed stop is over, not hung");
  t.true(STOP_DEADLINE_MS > 30_000, "longer than the writer's default drain deadline");
});
