import type { ChildProcess } from "node:child_process";

/** Every child handed to `reapOnExit` and not yet exited. */
const live = new Set<ChildProcess>();
let hooked = false;

/**
 * Makes sure `child` does not outlive this process: it is SIGKILLed when this process exits or
 * gets SIGINT/SIGTERM (the signal is then re-raised, so the exit status still says what killed
 * it). Harnesses (tests, chaos, soak) call this for every server and role process they start, so
 * an interrupted run never leaves one behind. Nothing else is ever signalled.
 */
export function reapOnExit(child: ChildProcess): void {
  live.add(child);
  const forget = () => live.delete(child);
  child.once("exit", forget);
  child.once("error", forget);
  if (hooked) return;
  hooked = true;
  const killAll = () => {
    for (const c of live) {
      try {
        c.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
    live.clear();
  };
  process.once("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      killAll();
      process.kill(process.pid, signal);
    });
  }
}
