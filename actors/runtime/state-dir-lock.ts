import { randomUUID } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { CustodyError, processRunning } from "../../core/index.ts";

/**
 * One process per state directory (issue #46): a role that keeps state takes a lock file in its
 * directory for its whole life, and a second start on the same directory is refused, naming the
 * process that holds it. Node has no flock, so the lock is a file that says who holds it — pid,
 * the process's start time (from /proc, which defeats pid reuse), role, id and incarnation — and
 * is believed only while that process lives: a lock left by a SIGKILLed process (or a host that
 * rebooted) is stale and is taken over by the next start.
 *
 * - Locks are numbered: `custody.lock.<n>`; the highest number present is the lock. A start takes
 *   `n + 1` when `n` is stale (or none exists), by writing its full record to a private temporary
 *   file and hard-linking it to that name: link fails when the name exists, so of several starts
 *   racing over one stale lock exactly one wins, and no lock file is ever half-written. A start
 *   that loses the race reads the winner's lock and is refused.
 * - The winner removes the lower numbers (stale by then); nothing ever renames or removes a lock
 *   another live process holds.
 * - It is removed when the process stops or exits; what is left after a kill is judged stale.
 */

/** The lock files' common prefix inside a role's state directory (`custody.lock.<n>`). */
export const LOCK_PREFIX = "custody.lock.";

/** Who holds a state directory, as its lock file says. */
export interface LockHolder {
  readonly pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), null where /proc is absent. */
  readonly start: number | null;
  readonly role: string;
  readonly id: string;
  /** The incarnation (a writer's term) it claimed, once claimed. */
  readonly incarnation?: number;
  /** Wall-clock ms when it took the lock. */
  readonly at: number;
  /** Unique per lock taken, so a record is never mistaken for another. */
  readonly token: string;
}

/** Thrown when another live process holds the state directory: the start changes nothing. */
export class StateDirLockedError extends CustodyError {
  constructor(
    readonly dir: string,
    readonly holder: LockHolder,
  ) {
    const what =
      holder.incarnation === undefined
        ? ""
        : ` ${holder.role === "writer" ? "term" : "incarnation"} ${holder.incarnation}`;
    super("state_dir_locked", `${dir} is held by pid ${holder.pid} (${holder.role} ${holder.id}${what})`, {
      dir,
      pid: holder.pid,
      role: holder.role,
      id: holder.id,
      ...(holder.incarnation !== undefined ? { incarnation: holder.incarnation } : {}),
    });
  }
}

/** A state-directory lock this process holds. */
export interface StateDirLock {
  readonly path: string;
  /** Records the incarnation (or term) this process claimed, so a refused start can name it. */
  claimed(incarnation: number): void;
  /** Removes the lock if it is still ours. Idempotent; also runs when the process exits. */
  release(): void;
}

/** Releases of the locks this process holds, run at exit (one listener for all of them). */
const heldLocks = new Set<() => void>();
let exitHooked = false;

/** Start time of `pid` in clock ticks since boot, or null when /proc does not say (not Linux, gone). */
export function processStart(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): a zombie has exited and holds nothing.
    if (fields[0] === "Z" || fields[0] === "X") return null;
    const start = Number(fields[19]);
    return Number.isFinite(start) ? start : null;
  } catch {
    return null;
  }
}

/** True while the process a lock record names still runs (the same process, not a reused pid). */
export function holderAlive(h: Pick<LockHolder, "pid" | "start">): boolean {
  if (!processRunning(h.pid)) return false;
  const now = processStart(h.pid);
  if (h.start === null) return now !== null || !procAvailable();
  return now === h.start;
}

function procAvailable(): boolean {
  return processStart(process.pid) !== null;
}

function parseHolder(raw: string): LockHolder | undefined {
  try {
    const v = JSON.parse(raw) as Partial<LockHolder>;
    if (typeof v.pid !== "number" || !Number.isSafeInteger(v.pid) || v.pid <= 0 || typeof v.token !== "string")
      return undefined;
    return {
      pid: v.pid,
      start: typeof v.start === "number" ? v.start : null,
      role: String(v.role ?? "?"),
      id: String(v.id ?? "?"),
      ...(typeof v.incarnation === "number" ? { incarnation: v.incarnation } : {}),
      at: Number(v.at ?? 0),
      token: v.token,
    };
  } catch {
    return undefined;
  }
}

function readRaw(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Writes `record` to a fresh file next to `path` (synced) and returns its name. */
function writeTemp(path: string, record: LockHolder): string {
  const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
  const fd = openSync(tmp, "wx", 0o644);
  try {
    writeSync(fd, JSON.stringify(record) + "\n");
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return tmp;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** The lock numbers present in `dir`, highest first. */
function lockNumbers(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(LOCK_PREFIX) && /^[1-9]\d{0,14}$/.test(n.slice(LOCK_PREFIX.length)))
    .map((n) => Number(n.slice(LOCK_PREFIX.length)))
    .sort((a, b) => b - a);
}

/** The current lock of `dir` (the highest number) and what it says, or undefined when there is none. */
export function currentLock(
  dir: string,
): { readonly n: number; readonly path: string; readonly holder: LockHolder | undefined } | undefined {
  for (let tries = 0; tries < 8; tries++) {
    const n = lockNumbers(dir)[0];
    if (n === undefined) return undefined;
    const path = join(dir, `${LOCK_PREFIX}${n}`);
    const raw = readRaw(path);
    // Gone between listing and reading: released, or cleaned up by a newer lock; look again.
    if (raw !== undefined) return { n, path, holder: parseHolder(raw) };
  }
  return undefined;
}

/**
 * Takes the lock of state directory `dir` (creating the directory) for this process, as `role`
 * `id`. Throws StateDirLockedError when a live process holds it; a stale lock is taken over.
 */
export function lockStateDir(dir: string, owner: { role: string; id: string }): StateDirLock {
  mkdirSync(dir, { recursive: true });
  let record: LockHolder = {
    pid: process.pid,
    start: processStart(process.pid),
    role: owner.role,
    id: owner.id,
    at: Date.now(),
    token: randomUUID(),
  };
  let mine: { n: number; path: string } | undefined;
  // A few rounds are enough: each one takes the lock, finds a live holder, or lost a race and looks again.
  for (let attempt = 0; mine === undefined; attempt++) {
    const cur = currentLock(dir);
    if (cur?.holder !== undefined && holderAlive(cur.holder)) throw new StateDirLockedError(dir, cur.holder);
    if (attempt >= 8)
      throw new StateDirLockedError(dir, cur?.holder ?? { ...record, pid: 0, role: "unknown", id: "unreadable lock" });
    const n = (cur?.n ?? 0) + 1;
    const tmp = writeTemp(join(dir, `${LOCK_PREFIX}tmp`), record);
    try {
      linkSync(tmp, join(dir, `${LOCK_PREFIX}${n}`));
      mine = { n, path: join(dir, `${LOCK_PREFIX}${n}`) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      unlinkQuietly(tmp);
    }
  }
  const { n: held, path } = mine;
  // The lower numbers are stale (the highest was, and we hold the one above it): clean them up.
  for (const n of lockNumbers(dir)) if (n < held) unlinkQuietly(join(dir, `${LOCK_PREFIX}${n}`));
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    heldLocks.delete(release);
    if (parseHolder(readRaw(path) ?? "")?.token === record.token) unlinkQuietly(path);
  };
  heldLocks.add(release);
  if (heldLocks.size === 1 && !exitHooked) {
    exitHooked = true;
    process.on("exit", () => [...heldLocks].forEach((r) => r()));
  }
  return {
    path,
    claimed(incarnation) {
      if (released) return;
      record = { ...record, incarnation };
      renameSync(writeTemp(path, record), path);
    },
    release,
  };
}
