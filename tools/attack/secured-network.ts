/**
 * The network the attacks run against: a small deployment `custody init` writes secured (two
 * regions on loopback; a RAM holder and the writer and controller in east, a disk holder in west),
 * its nats-servers, `custody bootstrap`, and every role of the attacked volume as a `custody run`
 * process. With `secondVolume`, a second volume `vol-b` runs on the same control log (writer w2,
 * holder h-e2, controller ctl-2), for attacks across volumes.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { custodyCommand, DEPLOYMENT_READY_MS, DeployedProcess, initAndStartNats } from "../../test/kit/index.ts";

const execFileAsync = promisify(execFile);

/**
 * `custody <args>` as the operator runs it: a process of its own (the attack is a tool, and tools do not import the
 * CLI); resolves with stdout, throws on a non-zero exit.
 */
export async function custody(args: readonly string[]): Promise<string> {
  const { command, args: argv } = custodyCommand(args);
  try {
    return (await execFileAsync(command, argv, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (err) {
    const e = err as { code?: unknown; stderr?: string; message: string };
    throw new Error(`custody ${args.join(" ")} exited ${String(e.code)}: ${(e.stderr ?? e.message).trim()}`);
  }
}

/** The instances and files of the running network. */
export interface SecuredNetwork {
  /** The output of `custody init`. */
  readonly out: string;
  /** Client URL per region. */
  readonly urls: Readonly<Record<string, string>>;
  readonly controlRegion: string;
  readonly volume: string;
  readonly lane: string;
  /** Role processes by instance name (`holder-h-e1`, ...). */
  readonly roles: ReadonlyMap<string, DeployedProcess>;
  /** The operator's connection file (`--operator-config`). */
  readonly operatorConfig: string;
  /** The role instance's directory (its seed, CA, keys). */
  roleDir(instance: string): string;
  /** Output of every process (for failure messages). */
  logs(): string;
  stop(): Promise<void>;
}

/**
 * Writes the deployment, starts it and waits until every role serves. `keep` leaves the files
 * behind; `secondVolume` adds vol-b on the same control log (writer w2, holder h-e2, controller ctl-2).
 */
export async function startSecuredNetwork(o: { keep?: boolean; secondVolume?: boolean } = {}): Promise<SecuredNetwork> {
  const servers: DeployedProcess[] = [];
  const roles = new Map<string, DeployedProcess>();
  const logs = () => [...servers, ...roles.values()].map((p) => p.log.slice(-4_000)).join("\n");
  // The deployment tests' two-region network, with the attack's own volume and no base builder.
  const started = await initAndStartNats(
    custody,
    () => mkdtempSync(join(tmpdir(), "custody-attack-")),
    {
      volume: "vol-a",
      workloadIntervalMs: 100,
      drainDeadlineMs: 5_000,
      baseBuilder: false,
      ...(o.secondVolume ? { secondVolume: true } : {}),
    },
    (p) => servers.push(p),
  );
  const { dir, out, index } = started;
  const stop = async () => {
    // As an operator stops it: the writers (they drain to the holders), then the holders while the
    // controllers still run (a RAM holder drains by the log releasing its ranges), then the
    // controllers, then the servers; the processes of one step side by side.
    const ofRole = (role: string) =>
      [...roles.values()].filter((p) => index.roles.some((r) => r.instance === p.name && r.role === role));
    for (const group of [ofRole("writer"), ofRole("holder"), ofRole("controller"), servers])
      await Promise.all(group.map((p) => p.stop()));
    if (!o.keep) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await custody(["bootstrap", join(out, "bootstrap.json")]);
    // The controllers first (they admit the holders' new incarnations), then the holders, then the
    // writers; the processes of one role start side by side (each serves its own volume or region).
    for (const role of ["controller", "holder", "writer"]) {
      const starting = index.roles
        .filter((x) => x.role === role)
        .map((r) => {
          const p = DeployedProcess.role(r.instance, r.role, r.config);
          roles.set(r.instance, p);
          return p;
        });
      await Promise.all(starting.map((p) => p.ready(DEPLOYMENT_READY_MS)));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    out,
    urls: Object.fromEntries(index.natsServers.map((s) => [s.region, s.url])),
    controlRegion: "ctl",
    volume: "vol-a",
    lane: "l0",
    roles,
    operatorConfig: join(out, "operator", "nats.json"),
    roleDir: (instance) => join(out, "roles", instance),
    logs,
    stop,
  };
}
