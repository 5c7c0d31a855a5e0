/**
 * The state-directory lock (actors/runtime/state-dir-lock.ts): one live process per directory, a refusal
 * that names the holder, and locks of dead processes (or reused pids) that never block a start.
 */
import test from "ava";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { currentLock, holderAlive, LOCK_PREFIX, lockStateDir, processStart, StateDirLockedError } from "../../actors/runtime/state-dir-lock.ts";

const dir = () => mkdtempSync(join(tmpdir(), "custody-lock-"));

/** The pid of a process that ran and was SIGKILLed (and reaped): it holds nothing. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  const pid = child.pid!;
  await new Promise<void>((resolve) => {
    child.on("exit", () => resolve());
    child.kill("SIGKILL");
  });
  return pid;
}

test("a second lock on a held directory is refused with state_dir_locked, naming pid, role, id and incarnation", (t) => {
  const d = dir();
  const lock = lockStateDir(d, { role: "holder", id: "h-e2" });
  lock.claimed(3);
  const err = t.throws(() => lockStateDir(d, { role: "holder", id: "h-e2" }), { instanceOf: StateDirLockedError });
  t.is(err?.code, "state_dir_locked");
  t.is(err?.message, `${d} is held by pid ${process.pid} (holder h-e2 incarnation 3)`);
  // The refused attempt changed nothing: the lock is still the first one's.
  t.like(currentLock(d)?.holder, { pid: process.pid, incarnation: 3 });
  lock.release();
  t.is(currentLock(d), undefined, "a release removes the lock");
  const again = lockStateDir(d, { role: "holder", id: "h-e2" });
  again.release();
});

test("a writer's refusal names its term", (t) => {
  const d = dir();
  const lock = lockStateDir(d, { role: "writer", id: "w1" });
  lock.claimed(7);
  t.throws(() => lockStateDir(d, { role: "writer", id: "w1" }), { message: /held by pid \d+ \(writer w1 term 7\)$/ });
  lock.release();
});

test("a lock left by a SIGKILLed process is stale: the next start takes it", async (t) => {
  const d = dir();
  const pid = await deadPid();
  writeFileSync(join(d, `${LOCK_PREFIX}1`), JSON.stringify({ pid, start: 1, role: "holder", id: "h1", incarnation: 2, at: 0, token: "dead" }));
  t.false(holderAlive({ pid, start: 1 }));
  const lock = lockStateDir(d, { role: "holder", id: "h1" });
  t.like(currentLock(d)?.holder, { pid: process.pid, role: "holder" });
  t.is(lock.path, join(d, `${LOCK_PREFIX}2`), "the next number is taken");
  t.false(existsSync(join(d, `${LOCK_PREFIX}1`)), "the stale lock is cleaned up");
  lock.release();
  t.deepEqual(readdirSync(d), [], "nothing is left behind");
});

test("a lock naming a live pid with another start time (the pid was reused) is stale", (t) => {
  const start = processStart(process.pid);
  if (start === null) return t.pass("no /proc here: pid reuse cannot be told apart");
  const d = dir();
  writeFileSync(join(d, `${LOCK_PREFIX}1`), JSON.stringify({ pid: process.pid, start: start - 1, role: "holder", id: "h1", at: 0, token: "old" }));
  t.false(holderAlive({ pid: process.pid, start: start - 1 }));
  t.true(holderAlive({ pid: process.pid, start }));
  const lock = lockStateDir(d, { role: "holder", id: "h1" });
  lock.release();
});

test("an unreadable lock file (not a lock record) does not block a start", (t) => {
  const d = dir();
  writeFileSync(join(d, `${LOCK_PREFIX}1`), "garbage");
  const lock = lockStateDir(d, { role: "controller", id: "c1" });
  t.like(currentLock(d)?.holder, { role: "controller", id: "c1" });
  lock.release();
});

test("a release leaves another process's lock alone", (t) => {
  const d = dir();
  const lock = lockStateDir(d, { role: "holder", id: "h1" });
  // Someone broke it (it should not have) and took it: our release must not remove theirs.
  writeFileSync(join(d, `${LOCK_PREFIX}1`), JSON.stringify({ pid: process.pid, start: processStart(process.pid), role: "holder", id: "h1", at: 0, token: "theirs" }));
  lock.release();
  t.like(currentLock(d)?.holder, { token: "theirs" });
});

test("processes racing for one directory over a stale lock: exactly one takes it, the others are refused naming it", async (t) => {
  const d = dir();
  const pid = await deadPid();
  writeFileSync(join(d, `${LOCK_PREFIX}1`), JSON.stringify({ pid, start: 1, role: "holder", id: "h1", incarnation: 2, at: 0, token: "dead" }));
  const go = join(d, "go");
  // Each child waits for the go file, tries the lock, prints the outcome and holds on until its stdin closes.
  const script = `
    import { existsSync } from "node:fs";
    import { lockStateDir } from ${JSON.stringify(join(process.cwd(), "actors", "runtime", "state-dir-lock.ts"))};
    console.log("ready");
    while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 1));
    try { lockStateDir(${JSON.stringify(d)}, { role: "holder", id: "h1" }); console.log("locked " + process.pid); }
    catch (err) { console.log("refused " + err.code + " " + err.message); }
    process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`;
  const children = Array.from({ length: 4 }, () => spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["pipe", "pipe", "inherit"] }));
  // Line 1 says the child is waiting for the go file; line 2 is its outcome.
  const lineOf = (c: (typeof children)[number], n: number) =>
    new Promise<string>((resolve) => {
      let out = "";
      c.stdout!.on("data", (b) => {
        out += String(b);
        const lines = out.split("\n");
        if (lines.length > n) resolve(lines[n - 1]!.trim());
      });
    });
  const ready = children.map((c) => lineOf(c, 1));
  const outcomes = children.map((c) => lineOf(c, 2));
  t.teardown(() => children.forEach((c) => c.kill("SIGKILL")));
  await Promise.all(ready); // all are polling: the go file starts them together
  writeFileSync(go, "");
  const lines = await Promise.all(outcomes);
  const winners = lines.filter((l) => l.startsWith("locked "));
  t.is(winners.length, 1, lines.join("\n"));
  const winner = winners[0]!.slice("locked ".length);
  for (const l of lines.filter((x) => !x.startsWith("locked "))) t.regex(l, new RegExp(`^refused state_dir_locked .* held by pid ${winner} \\(holder h1\\)$`));
  t.like(currentLock(d)?.holder, { pid: Number(winner) });
  for (const c of children) c.stdin!.end();
});
