/**
 * True while a process with this pid exists (signal 0 only probes it). EPERM means it exists under
 * another user; anything else (ESRCH) means it is gone. A pid can be reused: callers that must know
 * it is the same process also compare its start time (actors/runtime/state-dir-lock.ts).
 */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
