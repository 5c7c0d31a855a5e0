/**
 * Every child process the demo starts goes through one registry, which records its PID, sends
 * its output to a log file in the run folder, and stops all of them — on a normal end, on an
 * error, on Ctrl-C/SIGTERM, and (SIGKILL, synchronously) when this process exits. It never
 * signals a process it did not start.
 */
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { openSync, closeSync } from "node:fs";
import { CustodyError, processRunning } from "../../core/index.ts";

/** Thrown when a child cannot be spawned (missing binary, bad path). */
export class SpawnError extends CustodyError {
  constructor(name: string, message: string) {
    super("spawn_failed", `could not start ${name}: ${message}`, { name });
  }
}

/** One started child. */
export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Resolves with the exit code (or the signal name) once the process ended. */
  readonly exited: Promise<number | string | null>;
  readonly logPath: string;
  alive(): boolean;
}

const STOP_GRACE_MS = 3_000;

/** True when a process with this PID exists. */
export const pidAlive = processRunning;

/** Tracks and stops the demo's children. */
export class ProcessRegistry {
  private readonly procs: ManagedProcess[] = [];
  private hooks: (() => void) | undefined;
  /** Every PID ever started (for the "none left behind" check). */
  readonly startedPids: number[] = [];

  /**
   * Spawns `command args` with stdout/stderr appended to `logPath`. Throws SpawnError.
   */
  spawn(
    name: string,
    command: string,
    args: readonly string[],
    opts: { logPath: string; cwd?: string; env?: NodeJS.ProcessEnv },
  ): ManagedProcess {
    const fd = openSync(opts.logPath, "a");
    const stdio: StdioOptions = ["ignore", fd, fd];
    let child: ChildProcess;
    try {
      child = spawn(command, args, { stdio, cwd: opts.cwd, env: opts.env ?? process.env });
    } finally {
      closeSync(fd); // the child has its own copy
    }
    if (child.pid === undefined) throw new SpawnError(name, `${command} did not start (is it installed?)`);
    const exited = new Promise<number | string | null>((resolve) => {
      child.once("exit", (code, signal) => resolve(code ?? signal));
      child.once("error", () => resolve(-1));
    });
    const pid = child.pid;
    const p: ManagedProcess = {
      name,
      pid,
      child,
      exited,
      logPath: opts.logPath,
      alive: () => child.exitCode === null && child.signalCode === null,
    };
    this.procs.push(p);
    this.startedPids.push(pid);
    return p;
  }

  /** The process started under `name` (the newest, if several). */
  get(name: string): ManagedProcess | undefined {
    return [...this.procs].reverse().find((p) => p.name === name);
  }

  /** Sends SIGKILL to `name` (a simulated disaster) and waits until it is gone. */
  async kill(name: string): Promise<void> {
    const p = this.get(name);
    if (p === undefined || !p.alive()) return;
    p.child.kill("SIGKILL");
    await p.exited;
  }

  /** SIGTERM to every live child, SIGKILL after a grace period; resolves when all have exited. */
  async stopAll(): Promise<void> {
    await Promise.all(
      this.procs.map(async (p) => {
        if (!p.alive()) return;
        p.child.kill("SIGTERM");
        const t = setTimeout(() => p.child.kill("SIGKILL"), STOP_GRACE_MS);
        await p.exited;
        clearTimeout(t);
      }),
    );
  }

  /** PIDs this registry started that still exist. */
  livePids(): number[] {
    return this.startedPids.filter(pidAlive);
  }

  /**
   * Ctrl-C/SIGTERM stop every child, run `onSignal` (e.g. print where the run folder is) and exit
   * 130/143; a plain exit kills any survivor synchronously. Returns the uninstaller.
   */
  installSignalHandlers(onSignal: () => void = () => undefined): () => void {
    // Once interrupted, the demo exits 130/143 whichever path reaches process.exit first: the main
    // flow may notice its children dying and end with 1 before stopAll() has finished.
    let signalExitCode: number | undefined;
    const killNow = () => {
      for (const p of this.procs) if (p.alive()) p.child.kill("SIGKILL");
      if (signalExitCode !== undefined) process.exitCode = signalExitCode;
    };
    const onSig = (signal: NodeJS.Signals) => {
      signalExitCode = signal === "SIGINT" ? 130 : 143;
      void this.stopAll().finally(() => {
        onSignal();
        process.exit(signal === "SIGINT" ? 130 : 143);
      });
    };
    process.on("SIGINT", onSig);
    process.on("SIGTERM", onSig);
    process.on("exit", killNow);
    this.hooks = () => {
      process.off("SIGINT", onSig);
      process.off("SIGTERM", onSig);
      process.off("exit", killNow);
    };
    return this.hooks;
  }
}
