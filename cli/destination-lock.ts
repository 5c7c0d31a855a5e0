import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { CustodyError, processRunning } from "../core/index.ts";

/** The lock file a recovery keeps in its destination directory while it builds there. */
export const RECOVER_LOCK = ".recover.lock";

/** Thrown when another live process is recovering into the same directory. */
export class RecoverInProgressError extends CustodyError {
  constructor(dir: string, pid: number) {
    super(
      "recover_in_progress",
      `process ${pid} is recovering into ${dir} (${join(dir, RECOVER_LOCK)}): wait for it to end, or stop it`,
      { dir, pid },
    );
  }
}

/** A held destination: `release` removes the lock, and the directory when this lock created it and it is empty. */
export interface DestinationLock {
  release(): void;
}

/**
 * Takes `dir` (created when missing) for one recovery: an exclusive lock file holding this
 * process's id, so a second recovery into the same directory cannot remove or seal the first one's
 * partial files. A lock left by a process that no longer runs (a SIGKILLed recovery) is taken
 * over. Throws RecoverInProgressError when the holder still runs.
 */
export function lockDestination(dir: string): DestinationLock {
  const created = !existsSync(dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, RECOVER_LOCK);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw err;
      const pid = Number(readFileSync(path, "utf8").trim());
      if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && processRunning(pid))
        throw new RecoverInProgressError(dir, pid);
      unlinkSync(path); // its process is gone: the lock is stale
    }
  }
  return {
    release() {
      try {
        if (readFileSync(path, "utf8").trim() === String(process.pid)) unlinkSync(path);
        if (created && readdirSync(dir).length === 0) rmdirSync(dir);
      } catch {
        // already gone: nothing to release
      }
    },
  };
}
