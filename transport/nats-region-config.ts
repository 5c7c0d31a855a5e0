/**
 * nats-server configuration of one "region" of a loopback supercluster: a single-server cluster
 * joined to the other regions by gateways. Shared by the test harness and the demo launcher so
 * both start the same topology.
 *
 * Why the self-route cluster block: on nats-server 2.9, JetStream together with gateways refuses
 * to start ("JetStream cluster requires configured routes") unless the server has a named
 * cluster with routes; a one-server region lists its own cluster address as its only route.
 */
export const LOOPBACK = "127.0.0.1";

/** The ports one region's server listens on (all on 127.0.0.1). */
export interface RegionPorts {
  name: string;
  port: number;
  httpPort: number;
  clusterPort: number;
  gatewayPort: number;
}

/**
 * Pre-rendered config text a secured region adds (see transport/security/server-config.ts): `top` goes at
 * the top level (the `authorization` block, the client `tls {}` block), `cluster` and `gateway`
 * inside those blocks (their `tls {}`).
 */
export interface RegionSecurityBlocks {
  readonly top?: string;
  readonly cluster?: string;
  readonly gateway?: string;
}

/**
 * A replicated control log's own JetStream cluster on loopback (the topology `custody init` gives a
 * deployment with 3 regions, policies/deploy/control-servers.ts): `servers` are its members, one per region,
 * each a gateway peer of every region.
 */
export interface ControlClusterPorts {
  readonly name: string;
  readonly servers: readonly (RegionPorts & { readonly serverName: string })[];
}

/**
 * The `gateways` entries of a server of cluster `self`: every other region, and the control cluster (all its members'
 * URLs).
 */
function gatewayLines(self: string, all: readonly RegionPorts[], control: ControlClusterPorts | undefined): string {
  const lines = all
    .filter((o) => o.name !== self)
    .map((o) => `    { name: "${o.name}", url: "nats://${LOOPBACK}:${o.gatewayPort}" }`);
  if (control !== undefined && control.name !== self)
    lines.push(
      `    { name: "${control.name}", urls: ` +
        `[${control.servers.map((c) => `"nats://${LOOPBACK}:${c.gatewayPort}"`).join(", ")}] }`,
    );
  return lines.join("\n");
}

/**
 * Config text of member `server` of the control cluster `control`: JetStream in `storeDir`, routes
 * to the other members, gateways to every region of `regions` (no security: the chaos harness).
 */
export function controlClusterServerConfig(
  server: ControlClusterPorts["servers"][number],
  control: ControlClusterPorts,
  regions: readonly RegionPorts[],
  storeDir: string,
): string {
  return [
    `server_name: "${server.serverName}"`,
    `listen: "${LOOPBACK}:${server.port}"`,
    `http: "${LOOPBACK}:${server.httpPort}"`,
    `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
    `cluster {`,
    `  name: "${control.name}"`,
    `  listen: "${LOOPBACK}:${server.clusterPort}"`,
    `  routes: [${control.servers.map((c) => `"nats-route://${LOOPBACK}:${c.clusterPort}"`).join(", ")}]`,
    `}`,
    `gateway {`,
    `  name: "${control.name}"`,
    `  listen: "${LOOPBACK}:${server.gatewayPort}"`,
    `  gateways: [`,
    gatewayLines(control.name, regions, undefined),
    `  ]`,
    `}`,
  ].join("\n");
}

/**
 * Config text for region `r` of `all`; JetStream is on when `storeDir` is given; `security` adds
 * auth and TLS; `control` adds a gateway to a replicated control log's cluster.
 */
export function regionConfig(
  r: RegionPorts,
  all: readonly RegionPorts[],
  storeDir: string | undefined,
  security: RegionSecurityBlocks = {},
  control?: ControlClusterPorts,
): string {
  const gateways = gatewayLines(r.name, all, control);
  return [
    `server_name: "${r.name}-0"`,
    `listen: "${LOOPBACK}:${r.port}"`,
    `http: "${LOOPBACK}:${r.httpPort}"`,
    storeDir === undefined ? "" : `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
    `cluster {`,
    `  name: "${r.name}"`,
    `  listen: "${LOOPBACK}:${r.clusterPort}"`,
    `  routes: ["nats-route://${LOOPBACK}:${r.clusterPort}"]`,
    security.cluster ?? "",
    `}`,
    `gateway {`,
    `  name: "${r.name}"`,
    `  listen: "${LOOPBACK}:${r.gatewayPort}"`,
    security.gateway ?? "",
    `  gateways: [`,
    gateways,
    `  ]`,
    `}`,
    security.top ?? "",
  ].join("\n");
}
