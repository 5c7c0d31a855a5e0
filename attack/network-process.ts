import { spawn, type ChildProcess } from "node:child_process";
import { reapOnExit } from "../testing/index.ts";

/**
 * One process of the attacked network (`nats-server -c FILE` or `custody run <role> --config FILE`),
 * started as an operator would start it; its output is kept for failure messages.
 */
export class NetworkProcess {
  readonly child: ChildProcess;
  readonly ended: Promise<void>;
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
    this.ended = new Promise((resolve) => this.child.once("exit", () => resolve()));
  }

  /** `custody run <role> --config FILE`. */
  static role(name: string, role: string, config: string): NetworkProcess {
    return new NetworkProcess(name, process.execPath, ["--import", "tsx", "cli/main.ts", "run", role, "--config", config]);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** stdout and stderr so far. */
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

  /** SIGTERM, then SIGKILL if it has not ended within `ms`. */
  async stop(ms = 20_000): Promise<void> {
    if (!this.running) return;
    this.child.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
    const inTime = await Promise.race([this.ended.then(() => true as const), late]);
    clearTimeout(timer);
    if (!inTime) this.child.kill("SIGKILL");
    await this.ended;
  }
}
