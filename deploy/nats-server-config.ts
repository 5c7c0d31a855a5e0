import type { RegionSecurityText } from "../security/index.ts";
import type { DeploymentRegion } from "./deployment-schema.ts";

/**
 * The nats-server configuration of one deployment region: a one-server cluster with JetStream,
 * joined to every other region by a gateway.
 *
 * Why the self-route cluster block: nats-server 2.9 refuses JetStream together with gateways
 * unless the server has a named cluster with routes; a one-server region lists its own cluster
 * address as its only route (as transport/nats-region-config.ts does for loopback harnesses).
 *
 * With `security` (a secured deployment), the authorization block and the client `tls {}` go at
 * the top level, and the cluster route and the gateways get their own `tls {}` with verified peers.
 * Without it the server is open (unit tests only).
 */
export function natsServerConfig(name: string, regions: Readonly<Record<string, DeploymentRegion>>, security?: RegionSecurityText): string {
  const r = regions[name]!;
  const listen = r.listen ?? r.host;
  const gateways = Object.entries(regions)
    .filter(([other]) => other !== name)
    .map(([other, o]) => `    { name: "${other}", url: "nats://${o.host}:${o.gatewayPort}" }`);
  return [
    `server_name: "${name}-0"`,
    `listen: "${listen}:${r.port}"`,
    `http: "${listen}:${r.httpPort}"`,
    `jetstream { store_dir: ${JSON.stringify(r.jetstreamDir)} }`,
    `cluster {`,
    `  name: "${name}"`,
    `  listen: "${listen}:${r.clusterPort}"`,
    `  routes: ["nats-route://${r.host}:${r.clusterPort}"]`,
    ...(security ? [security.cluster] : []),
    `}`,
    `gateway {`,
    `  name: "${name}"`,
    `  listen: "${listen}:${r.gatewayPort}"`,
    `  gateways: [`,
    ...gateways,
    `  ]`,
    ...(security ? [security.gateway] : []),
    `}`,
    ...(security ? [security.top] : []),
    "",
  ].join("\n");
}

/** The URL a role of this region connects to. */
export function regionUrl(r: DeploymentRegion): string {
  return `nats://${r.host}:${r.port}`;
}
