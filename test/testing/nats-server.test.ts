import test from "ava";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { isProcessAlive, liveNatsServerPids, startNatsServer, startSupercluster } from "../kit/nats-server.ts";

test("startNatsServer serves JetStream on loopback; stop kills the process and deletes its files", async (t) => {
  const server = await startNatsServer();
  const pid = server.pid;
  t.regex(server.url, /^nats:\/\/127\.0\.0\.1:\d+$/);
  t.true(isProcessAlive(pid));
  t.true(liveNatsServerPids().includes(pid));
  const nc = await connectNats({ servers: server.url, name: "harness-probe" });
  const info = await (await jetstreamManager(nc)).getAccountInfo();
  t.is(typeof info.storage, "number");
  await closeNats(nc);
  await server.stop();
  await t.notThrowsAsync(server.stop(), "stop is idempotent");
  t.false(isProcessAlive(pid));
  t.false(liveNatsServerPids().includes(pid));
  t.false(existsSync(server.storeDir));
});

test("restart (SIGTERM) comes back on the same port and store dir with committed JetStream messages", async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { port, url, storeDir } = server;
  const before = server.pid;
  let nc = await connectNats({ servers: url, name: "harness-js" });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "HARNESS", subjects: ["harness.>"] });
  const ack = await jetstream(nc).publish("harness.one", new Uint8Array([1, 2, 3]));
  await closeNats(nc);

  await server.restart();
  t.not(server.pid, before);
  t.false(isProcessAlive(before));
  t.is(server.port, port);
  t.is(server.storeDir, storeDir);

  nc = await connectNats({ servers: url, name: "harness-js-after" });
  const stored = await (await jetstreamManager(nc)).streams.getMessage("HARNESS", { seq: ack.seq });
  t.deepEqual([...(stored?.data ?? [])], [1, 2, 3]);
  await closeNats(nc);
});

test("restart with kill (SIGKILL) brings a healthy server back on the same port", async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const before = server.pid;
  await server.restart({ kill: true });
  t.false(isProcessAlive(before));
  const nc = await connectNats({ servers: server.url, name: "harness-after-kill" });
  await t.notThrowsAsync(nc.flush());
  await closeNats(nc);
});

test("two servers started back to back get different ports", async (t) => {
  const [s1, s2] = await Promise.all([startNatsServer({ jetstream: false }), startNatsServer({ jetstream: false })]);
  t.teardown(() => Promise.all([s1.stop(), s2.stop()]));
  t.not(s1.port, s2.port);
});

test("startSupercluster rejects duplicate or malformed region names before starting anything", async (t) => {
  await t.throwsAsync(startSupercluster({ regions: ["a", "a"] }), { message: /distinct/ });
  await t.throwsAsync(startSupercluster({ regions: ["bad name"] }), { message: /bad region/ });
  await t.throwsAsync(startSupercluster({ regions: [] }), { message: /distinct/ });
});

test("a harness interrupted with SIGINT takes the servers it started with it (reapOnExit)", async (t) => {
  const script = `import { startNatsServer } from "./test/kit/nats-server.ts";
const s = await startNatsServer();
process.stdout.write(JSON.stringify({ pid: s.pid }) + "\\n");
setInterval(() => undefined, 1000);`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] });
  const pid = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b) => {
      out += String(b);
      if (out.includes("\n")) resolve((JSON.parse(out.split("\n")[0]!) as { pid: number }).pid);
    });
    child.once("exit", (code) => reject(new Error(`harness exited ${code} before starting a server`)));
  });
  t.true(isProcessAlive(pid));
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once("exit", (_code, signal) => r(signal)));
  child.kill("SIGINT");
  t.is(await exited, "SIGINT", "the harness still dies of the signal");
  const deadline = Date.now() + 5_000;
  while (isProcessAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.false(isProcessAlive(pid), "its nats-server is gone");
});
