import { spawn, type ChildProcess } from "node:child_process";
import { processRunning } from "../../core/index.ts";
import { reapOnExit } from "./child-reaper.ts";
import { custodyCommand } from "./custody-command.ts";

/**
 * One role process (`custody run <role> --config FILE`) under a small supervisor, as a deployment
 * runs it: `start` resolves once it printed its ready line, and a start that fails (NATS not back
 * yet) or a process that exits by itself (exit 2: its connection closed for good) is started again
 * after `restartDelayMs`. `kill` (a fault) and `stop` wait for the exit; after `kill` the harness
 * decides when to start it again. Every pid ever started is kept, so the harness can prove at the
 * end that none is left.
 */
export class RoleProcess {
  private child: ChildProcess | undefined;
  private stderr = "";
  /** True while the process is meant to run (not killed by a fault, not stopped). */
  private wanted = false;
  /** Starts and restarts by the supervisor (diagnostics). */
  restarts = 0;
  readonly pids: number[] = [];
  restartDelayMs = 500;

  constructor(
    readonly role: string,
    readonly configFile: string,
    private readonly cwd: string,
  ) {}

  /** Starts the process (again and again until it is ready, within `timeoutMs`) and resolves with its ready line. */
  async start(timeoutMs = 90_000): Promise<Record<string, unknown>> {
    this.wanted = true;
    const until = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await this.startOnce();
      } catch (err) {
        if (!this.wanted || Date.now() > until) throw err;
        this.restarts++;
        await new Promise((r) => setTimeout(r, this.restartDelayMs));
      }
    }
  }

  private startOnce(): Promise<Record<string, unknown>> {
    const c = custodyCommand(["run", this.role, "--config", this.configFile]);
    const child = spawn(c.command, c.args, { cwd: this.cwd, stdio: ["ignore", "pipe", "pipe"] });
    reapOnExit(child);
    this.child = child;
    if (child.pid !== undefined) this.pids.push(child.pid);
    this.stderr = "";
    child.stderr!.on("data", (b) => (this.stderr = (this.stderr + String(b)).slice(-4000)));
    return new Promise((resolve, reject) => {
      let out = "";
      let ready = false;
      child.stdout!.on("data", (b) => {
        out += String(b);
        const nl = out.indexOf("\n");
        if (!ready && nl >= 0 && out.startsWith("{")) {
          ready = true;
          resolve(JSON.parse(out.slice(0, nl)) as Record<string, unknown>);
        }
      });
      child.once("exit", (code) => {
        if (!ready)
          return reject(
            new Error(`${this.role} ${this.configFile} exited (${code}) before it was ready: ${this.stderr}`),
          );
        // It went away by itself while wanted: the supervisor starts it again.
        if (this.wanted && this.child === child) {
          this.restarts++;
          setTimeout(() => void this.start().catch(() => undefined), this.restartDelayMs);
        }
      });
    });
  }

  /** True while the current process runs. */
  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The tail of the current process's stderr. */
  get log(): string {
    return this.stderr;
  }

  private async signal(sig: NodeJS.Signals, graceMs: number): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill(sig);
    const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(t);
  }

  /** Freezes the current process (SIGSTOP) for `ms`, then resumes it (SIGCONT): it is cut off, not dead. */
  async pause(ms: number): Promise<void> {
    const child = this.child;
    if (child === undefined || !this.alive) return;
    child.kill("SIGSTOP");
    await new Promise((r) => setTimeout(r, ms));
    child.kill("SIGCONT");
  }

  /** SIGKILL, then wait for the exit (not restarted until `start`). */
  kill(): Promise<void> {
    this.wanted = false;
    return this.signal("SIGKILL", 5_000);
  }

  /** SIGTERM (SIGKILL after `graceMs`), then wait for the exit. */
  stop(graceMs = 40_000): Promise<void> {
    this.wanted = false;
    return this.signal("SIGTERM", graceMs);
  }
}

/** True when a process with this PID exists. */
export const pidAlive = processRunning;
