import { spawn, type ChildProcess } from "node:child_process";

/**
 * One role process (`custody run <role> --config FILE`) started by a harness: resolves once it
 * printed its ready line; `kill` and `stop` wait for the exit. Every pid ever started is kept, so
 * the harness can prove at the end that none is left.
 */
export class RoleProcess {
  private child: ChildProcess | undefined;
  private stderr = "";
  readonly pids: number[] = [];

  constructor(
    readonly role: string,
    readonly configFile: string,
    private readonly cwd: string,
  ) {}

  /** Starts the process and resolves with its ready line; rejects (with its stderr) if it exits first. */
  async start(): Promise<Record<string, unknown>> {
    const child = spawn(process.execPath, ["--import", "tsx", "cli/main.ts", "run", this.role, "--config", this.configFile], { cwd: this.cwd, stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    if (child.pid !== undefined) this.pids.push(child.pid);
    this.stderr = "";
    child.stderr!.on("data", (b) => (this.stderr = (this.stderr + String(b)).slice(-4000)));
    return new Promise((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (b) => {
        out += String(b);
        const nl = out.indexOf("\n");
        if (nl >= 0 && out.startsWith("{")) resolve(JSON.parse(out.slice(0, nl)) as Record<string, unknown>);
      });
      child.once("exit", (code) => reject(new Error(`${this.role} ${this.configFile} exited (${code}) before it was ready: ${this.stderr}`)));
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

  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void> {
    return this.signal("SIGKILL", 5_000);
  }

  /** SIGTERM (SIGKILL after `graceMs`), then wait for the exit. */
  stop(graceMs = 40_000): Promise<void> {
    return this.signal("SIGTERM", graceMs);
  }
}

/** True when `pid` is still a live process. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
