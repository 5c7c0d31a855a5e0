import type { DeployedProcess } from "./deployed-process.ts";

/** GET a JSON document; undefined when there is no 200 answer (yet). */
export async function getJson(url: string): Promise<any> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return res.status === 200 ? await res.json() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Waits until every region's nats-server (started from `custody init`'s configs) is healthy, its
 * gateways to every other region are up both ways and a JetStream meta leader is known. Throws
 * with `logs()` when a server ends first or `readyMs` passes. The bound measures nothing.
 */
export async function waitForRegions(
  natsServers: readonly { region: string }[],
  httpPorts: Readonly<Record<string, { httpPort: number }>>,
  servers: readonly DeployedProcess[],
  logs: () => string,
  readyMs: number,
): Promise<void> {
  for (const s of natsServers) {
    const http = `http://127.0.0.1:${httpPorts[s.region]!.httpPort}`;
    const others = natsServers.map((x) => x.region).filter((r) => r !== s.region);
    const end = Date.now() + readyMs;
    for (;;) {
      if (servers.some((p) => !p.running)) throw new Error(`a nats-server ended before it was ready\n${logs()}`);
      const gw = await getJson(`${http}/gatewayz`);
      const js = await getJson(`${http}/jsz`);
      const up = (await getJson(`${http}/healthz`)) !== undefined && others.every((x) => x in (gw?.outbound_gateways ?? {}) && x in (gw?.inbound_gateways ?? {}));
      if (up && typeof js?.meta_cluster?.leader === "string") return;
      if (Date.now() > end) throw new Error(`timed out waiting for nats ${s.region} ready\n${logs()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
