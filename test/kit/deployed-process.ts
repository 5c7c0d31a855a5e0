import { spawn, type ChildProcess } from "node:child_process";
import { reapOnExit } from "./child-reaper.ts";
import { custodyCommand } from "./custody-command.ts";

/** How a child ended: its exit code, or the signal that killed it. */
export interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * One process of a deployment under test (or under attack), started exactly as an operator would
 * (`custody run <role> --config FILE`, or `nats-server -c FILE`). Records how it ended;
 * `reapOnExit` makes sure a failing run leaves nothing behind.
 */
export class DeployedProcess {
  readonly child: ChildProcess;
  readonly ended: Promise<Ended>;
  private out = "";
  private err = "";

  constructor(
    readonly name: string,
    command: string,
    args: readonly string[],
  ) {
    this.child = spawn(command, args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
    reapOnExit(this.child);
    this.child.stdout!.on("data", (b) => (this.out = (this.out + String(b)).slice(-20_000)));
    this.child.stderr!.on("data", (b) => (this.err = (this.err + String(b)).slice(-20_000)));
    this.ended = new Promise((resolve) => this.child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  /** `custody run <role> --config FILE` as a child of this test. */
  static role(name: string, role: string, config: string): DeployedProcess {
    const c = custodyCommand(["run", role, "--config", config]);
    return new DeployedProcess(name, c.command, c.args);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** What it printed on stdout so far (the last 20,000 characters). */
  get stdout(): string {
    return this.out;
  }

  /** What it printed on stderr so far (the last 20,000 characters). */
  get stderr(): string {
    return this.err;
  }

  /** stdout and stderr so far (for failure messages). */
  get log(): string {
    return `${this.name} stdout:\n${this.out}\n${this.name} stderr:\n${this.err}`;
  }

  /** Resolves with the `{"ready":true,…}` line; rejects if the process ends first or not within `ms`. */
  async ready(ms: number): Promise<Record<string, unknown>> {
    const until = Date.now() + ms;
    for (;;) {
      const line = this.out.split("\n").find((l) => l.includes('"ready":true'));
      if (line !== undefined) return JSON.parse(line) as Record<string, unknown>;
      if (!this.running) throw new Error(`${this.name} ended before it was ready\n${this.log}`);
      if (Date.now() > until) throw new Error(`${this.name} not ready within ${ms} ms\n${this.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Sends `signal` and waits for the end, at most `ms` (then SIGKILL, and the result says so). */
  async signal(signal: NodeJS.Signals, ms: number): Promise<Ended & { inTime: boolean }> {
    if (!this.running) return { ...(await this.ended), inTime: true };
    this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
    const inTime = await Promise.race([this.ended.then(() => true as const), late]);
    clearTimeout(timer);
    if (!inTime) this.child.kill("SIGKILL");
    return { ...(await this.ended), inTime };
  }

  /** SIGTERM, then SIGKILL if it has not ended within `ms`. */
  async stop(ms = 20_000): Promise<void> {
    await this.signal("SIGTERM", ms);
  }
}

/** Whether a process is alive (the kit has one answer: role-process.ts). */
export { pidAlive } from "./role-process.ts";
