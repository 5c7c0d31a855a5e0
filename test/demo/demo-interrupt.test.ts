/**
 * Ctrl-C in the middle of the demo: every process it started (nats-servers and actor processes)
 * is stopped, and the demo exits with 130.
 */
import test from "ava";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { pidAlive } from "../../tools/demo/process-registry.ts";
import { scriptCommand } from "../kit/script-command.ts";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

test("Ctrl-C during the workload stops every process the demo started and exits 130", async (t) => {
  t.timeout(240_000);
  const root = mkdtempSync(join(tmpdir(), "custody-demo-int-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const demo = scriptCommand(join(repo, "tools", "demo", "run-demo.ts"), ["--short", "--runs", root]);
  const child = spawn(demo.command, demo.args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  await new Promise<void>((res, rej) => {
    const t2 = setTimeout(() => rej(new Error(`the demo never reached its workload:\n${out.slice(-3000)}`)), 200_000);
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
      if (/streaming \d+ volumes/.test(out)) {
        clearTimeout(t2);
        res();
      }
    });
  });
  child.kill("SIGINT");
  const code = await exited;
  t.is(code, 130);
  const runDir = join(root, readdirSync(root)[0]!);
  const pids = JSON.parse(readFileSync(join(runDir, "pids.json"), "utf8")) as number[];
  t.true(pids.length >= 11, "4 nats-servers and 7 actors were running");
  // A SIGKILLed child can take a moment to be reaped on a loaded machine: wait for each with a
  // bound instead of sampling once (the demo itself waits for every exit before it exits).
  const deadline = Date.now() + 15_000;
  while (pids.some(pidAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.deepEqual(pids.filter(pidAlive), [], "none is left");
});
