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

/** The replica servers of a replicated control log as `roles.json` lists them. */
export interface ControlServerEntry {
  readonly region: string;
  readonly cluster: string;
  readonly serverName: string;
  readonly config: string;
  readonly httpPort: number;
}

/**
 * Waits until every region's nats-server (started from `custody init`'s configs) is healthy, its
 * gateways to every other region (and to the control log's cluster, with `controlServers`) are up
 * both ways and a JetStream meta leader is known (without `controlServers`: the regions' servers
 * then run no JetStream); then each control log server, with outbound gateways to every region and
 * a meta leader. Throws with `logs()` when a server ends first or `readyMs` passes.
 * The bound measures nothing.
 */
export async function waitForRegions(
  natsServers: readonly { region: string }[],
  httpPorts: Readonly<Record<string, { httpPort: number }>>,
  servers: readonly DeployedProcess[],
  logs: () => string,
  readyMs: number,
  controlServers: readonly ControlServerEntry[] = [],
): Promise<void> {
  const regions = natsServers.map((x) => x.region);
  const cluster = controlServers[0]?.cluster;
  const gateways = [...regions, ...(cluster !== undefined ? [cluster] : [])];
  const all = [
    // With a replicated control log the regions' servers run no JetStream (no meta leader to wait for there).
    ...natsServers.map((s) => ({
      name: `nats ${s.region}`,
      httpPort: httpPorts[s.region]!.httpPort,
      others: gateways.filter((r) => r !== s.region),
      inbound: true,
      jetstream: cluster === undefined,
    })),
    // A region's one outbound gateway to the control cluster lands on one of its servers: a control server has outbound
    // gateways only for sure.
    ...controlServers.map((c) => ({
      name: `nats ${c.serverName}`,
      httpPort: c.httpPort,
      others: regions,
      inbound: false,
      jetstream: true,
    })),
  ];
  for (const s of all) {
    const http = `http://127.0.0.1:${s.httpPort}`;
    const end = Date.now() + readyMs;
    for (;;) {
      if (servers.some((p) => !p.running)) throw new Error(`a nats-server ended before it was ready\n${logs()}`);
      const gw = await getJson(`${http}/gatewayz`);
      const js = await getJson(`${http}/jsz`);
      const up =
        (await getJson(`${http}/healthz`)) !== undefined &&
        s.others.every((x) => x in (gw?.outbound_gateways ?? {}) && (!s.inbound || x in (gw?.inbound_gateways ?? {})));
      if (up && (!s.jetstream || typeof js?.meta_cluster?.leader === "string")) break;
      if (Date.now() > end) throw new Error(`timed out waiting for ${s.name} ready\n${logs()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
