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
 * Pre-rendered config text a secured region adds (see security/server-config.ts): `top` goes at
 * the top level (the `authorization` block, the client `tls {}` block), `cluster` and `gateway`
 * inside those blocks (their `tls {}`).
 */
export interface RegionSecurityBlocks {
  readonly top?: string;
  readonly cluster?: string;
  readonly gateway?: string;
}

/** Config text for region `r` of `all`; JetStream is on when `storeDir` is given; `security` adds auth and TLS. */
export function regionConfig(r: RegionPorts, all: readonly RegionPorts[], storeDir: string | undefined, security: RegionSecurityBlocks = {}): string {
  const gateways = all
    .filter((o) => o.name !== r.name)
    .map((o) => `    { name: "${o.name}", url: "nats://${LOOPBACK}:${o.gatewayPort}" }`)
    .join("\n");
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
