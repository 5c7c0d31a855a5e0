import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../e2e/e2e-fixture.ts";
import { DeployedProcess } from "../../testing/deployed-process.ts";
import { custodyCli } from "../helpers/custody-cli.ts";
import { loopbackDeployment } from "./loopback-deployment.ts";

/** Runs `custody <args>` (in this process) and resolves with its stdout (rejects on a non-zero exit). */
export const custody = async (args: string[]) => (await custodyCli(args)).stdout;
const NATS_SERVER_BIN = process.env["NATS_SERVER_BIN"] ?? "nats-server";
/** Generous bound: it only ends a hung start, it measures nothing. */
export const READY_MS = 90_000;

/** GET a JSON document; undefined when there is no 200 answer (yet). */
export async function getJson(url: string): Promise<any> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return res.status === 200 ? await res.json() : undefined;
  } catch {
    return undefined;
  }
}

/** Polls `check` until it returns a value (not undefined); throws with `explain()` after `ms`. */
export async function until<T>(what: string, ms: number, check: () => Promise<T | undefined>, explain: () => string | Promise<string> = () => ""): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${await explain()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** One instance in `roles.json`. */
export interface RoleEntry {
  instance: string;
  role: string;
  region: string;
  config: string;
}

/** `roles.json` as `custody init` writes it. */
export type Index = { roles: RoleEntry[]; natsServers: { region: string; config: string; url: string }[] };

/**
 * `custody init` on a fresh loopback deployment, then one nats-server per region from the configs
 * it wrote, until every region is healthy, its gateways are up both ways and a JetStream meta
 * leader is known. Free ports are picked before the servers bind them; when another process took
 * one meanwhile ("address already in use"), it starts over with new ports (3 attempts).
 */
export async function initAndStartNats(track: (p: DeployedProcess) => void, o: { extraRegions?: readonly string[] } = {}): Promise<{ out: string; index: Index; servers: DeployedProcess[] }> {
  for (let attempt = 1; ; attempt++) {
    const dir = tempDir("custody-deploy-");
    const deployment = await loopbackDeployment(dir, { metrics: true, ...o });
    writeFileSync(join(dir, "deployment.json"), JSON.stringify(deployment));
    const out = join(dir, "out");
    await custody(["init", join(dir, "deployment.json"), "--out", out]);
    const index = JSON.parse(readFileSync(join(out, "roles.json"), "utf8")) as Index;
    const regions = deployment["regions"] as Record<string, { httpPort: number }>;
    const servers = index.natsServers.map((s) => new DeployedProcess(`nats-${s.region}`, NATS_SERVER_BIN, ["-c", s.config]));
    servers.forEach(track);
    const logs = () => servers.map((p) => p.log).join("\n");
    try {
      for (const s of index.natsServers) {
        const http = `http://127.0.0.1:${regions[s.region]!.httpPort}`;
        const others = index.natsServers.map((o) => o.region).filter((r) => r !== s.region);
        await until(`nats ${s.region} ready`, READY_MS, async () => {
          if (servers.some((p) => !p.running)) throw new Error(`a nats-server ended before it was ready\n${logs()}`);
          const gw = await getJson(`${http}/gatewayz`);
          const js = await getJson(`${http}/jsz`);
          const ok = (await getJson(`${http}/healthz`)) !== undefined && others.every((o) => o in (gw?.outbound_gateways ?? {}) && o in (gw?.inbound_gateways ?? {})) && typeof js?.meta_cluster?.leader === "string";
          return ok ? true : undefined;
        }, logs);
      }
      return { out, index, servers };
    } catch (err) {
      for (const p of servers) await p.signal("SIGKILL", 10_000);
      if (attempt >= 3 || !/address already in use/i.test(logs())) throw err;
    }
  }
}

