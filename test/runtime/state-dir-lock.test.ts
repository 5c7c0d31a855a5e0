/**
 * The state-directory lock (runtime/state-dir-lock.ts): one live process per directory, a refusal
 * that names the holder, and locks of dead processes (or reused pids) that never block a start.
 */
import test from "ava";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { holderAlive, LOCK_FILE, lockStateDir, processStart, StateDirLockedError } from "../../runtime/state-dir-lock.ts";

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
  t.like(JSON.parse(readFileSync(join(d, LOCK_FILE), "utf8")), { pid: process.pid, incarnation: 3 });
  lock.release();
  t.false(existsSync(join(d, LOCK_FILE)), "a release removes the lock");
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
  writeFileSync(join(d, LOCK_FILE), JSON.stringify({ pid, start: 1, role: "holder", id: "h1", incarnation: 2, at: 0, token: "dead" }));
  t.false(holderAlive({ pid, start: 1 }));
  const lock = lockStateDir(d, { role: "holder", id: "h1" });
  t.like(JSON.parse(readFileSync(join(d, LOCK_FILE), "utf8")), { pid: process.pid, role: "holder" });
  lock.release();
});

test("a lock naming a live pid with another start time (the pid was reused) is stale", (t) => {
  const start = processStart(process.pid);
  if (start === null) return t.pass("no /proc here: pid reuse cannot be told apart");
  const d = dir();
  writeFileSync(join(d, LOCK_FILE), JSON.stringify({ pid: process.pid, start: start - 1, role: "holder", id: "h1", at: 0, token: "old" }));
  t.false(holderAlive({ pid: process.pid, start: start - 1 }));
  t.true(holderAlive({ pid: process.pid, start }));
  const lock = lockStateDir(d, { role: "holder", id: "h1" });
  lock.release();
});

test("an unreadable lock file (not a lock record) does not block a start", (t) => {
  const d = dir();
  writeFileSync(join(d, LOCK_FILE), "garbage");
  const lock = lockStateDir(d, { role: "controller", id: "c1" });
  t.like(JSON.parse(readFileSync(join(d, LOCK_FILE), "utf8")), { role: "controller", id: "c1" });
  lock.release();
});

test("a release leaves another process's lock alone", (t) => {
  const d = dir();
  const lock = lockStateDir(d, { role: "holder", id: "h1" });
  // Someone broke it (it should not have) and took it: our release must not remove theirs.
  writeFileSync(join(d, LOCK_FILE), JSON.stringify({ pid: process.pid, start: processStart(process.pid), role: "holder", id: "h1", at: 0, token: "theirs" }));
  lock.release();
  t.true(existsSync(join(d, LOCK_FILE)));
});
