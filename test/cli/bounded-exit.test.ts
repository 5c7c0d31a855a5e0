/**
 * The `custody` executable as a shell runs it (issue #47): a command pointed at a port that is not
 * a NATS client port ends with one `error [code]: …` line naming the URL instead of hanging, and
 * output to a closed pipe (`custody … | head -2`) ends quietly, without an EPIPE stack trace.
 */
import test from "ava";
import { spawn } from "node:child_process";
import { custodyCommand, reapOnExit, startNatsServer } from "../kit/index.ts";

/** How long a run may take before it is killed: a hang fails the test instead of stalling the suite. */
const KILL_AFTER_MS = 60_000;

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  readonly killed: boolean;
}

/** Runs `custody <args>` as its own process until it exits; with `closeStdout`, nobody ever reads its stdout. */
function runCustody(args: readonly string[], opts: { closeStdout?: boolean } = {}): Promise<Exit> {
  const { command, args: argv } = custodyCommand(args);
  const started = performance.now();
  const child = spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"] });
  reapOnExit(child);
  let stdout = "";
  let stderr = "";
  if (opts.closeStdout) child.stdout.destroy(); // the reader is gone before the first write
  else child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, KILL_AFTER_MS);
  return new Promise((resolve) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Math.round(performance.now() - started), killed });
    }),
  );
}

test("status and ps against a nats-server's monitoring port exit 1 with one error line naming the URL", async (t) => {
  const server = await startNatsServer({ jetstream: false });
  t.teardown(() => server.stop());
  const url = `nats://127.0.0.1:${server.httpPort}`;
  const [status, ps] = await Promise.all([runCustody(["status", "vol-a", "--server", url]), runCustody(["ps", "--server", url])]);
  for (const [name, r] of [["status", status], ["ps", ps]] as const) {
    t.log(`custody ${name}: exit ${r.code} after ${r.ms} ms: ${r.stderr.trim()}`);
    t.false(r.killed, `custody ${name} did not exit by itself`);
    t.is(r.code, 1, name);
    const lines = r.stderr.trimEnd().split("\n");
    t.is(lines.length, 1, `${name}: exactly one line on stderr`);
    t.regex(lines[0]!, /^error \[[a-z_]+\]: /, name);
    t.true(lines[0]!.includes(url), `${name} names the URL: ${lines[0]}`);
  }
});

test("output to a closed pipe ends quietly: no stack trace, the command's own exit code", async (t) => {
  const r = await runCustody(["size", "--bytes-per-sec", "1000000", "--retention-sec", "60"], { closeStdout: true });
  t.log(`custody size with its stdout closed: exit ${r.code} after ${r.ms} ms`);
  t.false(r.killed);
  t.is(r.stderr, "", "nothing on stderr (an EPIPE used to end the process with a stack trace)");
  t.is(r.code, 0);
});
