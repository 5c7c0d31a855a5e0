import type { RegionSecurityText } from "../../transport/security/index.ts";
import type { ControlLogTopology, ControlServer } from "./control-servers.ts";
import type { DeploymentRegion } from "./deployment-schema.ts";

/**
 * The nats-server configuration of one deployment region: a one-server cluster with JetStream,
 * joined to every other region by a gateway. With a replicated control log (`control`), also to the
 * control log's cluster, and without JetStream: the control stream is the only JetStream state, and
 * it lives on that cluster, so the JetStream meta group is the three control servers alone (one
 * region lost leaves 2 of 3) and a region's server keeps no state.
 *
 * Why the self-route cluster block: nats-server 2.9 refuses JetStream together with gateways
 * unless the server has a named cluster with routes; a one-server region lists its own cluster
 * address as its only route (as transport/nats-region-config.ts does for loopback harnesses).
 *
 * With `security` (a secured deployment), the authorization block and the client `tls {}` go at
 * the top level, and the cluster route and the gateways get their own `tls {}` with verified peers.
 * Without it the server is open (unit tests only).
 */
export function natsServerConfig(
  name: string,
  regions: Readonly<Record<string, DeploymentRegion>>,
  security?: RegionSecurityText,
  control?: ControlLogTopology,
): string {
  const r = regions[name]!;
  const listen = r.listen ?? r.host;
  return [
    `server_name: "${name}-0"`,
    `listen: "${listen}:${r.port}"`,
    `http: "${listen}:${r.httpPort}"`,
    ...(control?.replicated === true ? [] : [`jetstream { store_dir: ${JSON.stringify(r.jetstreamDir)} }`]),
    `cluster {`,
    `  name: "${name}"`,
    `  listen: "${listen}:${r.clusterPort}"`,
    `  routes: ["nats-route://${r.host}:${r.clusterPort}"]`,
    ...(security ? [security.cluster] : []),
    `}`,
    ...gatewayBlock(name, listen, r.gatewayPort, regions, control, security),
    ...(security ? [security.top] : []),
    "",
  ].join("\n");
}

/**
 * The nats-server configuration of one replica server of a replicated control log: JetStream, a
 * member of the control log's cluster (routes to the other replica servers), joined to every
 * region by a gateway. Secured like the region's own server (same users, same certificate: it runs
 * on the region's host); no role connects to it, JetStream API requests and the control subject
 * reach it through the gateways.
 */
export function controlServerConfig(
  server: ControlServer,
  control: ControlLogTopology & { replicated: true },
  regions: Readonly<Record<string, DeploymentRegion>>,
  security?: RegionSecurityText,
): string {
  const routes = control.servers.map((s) => `"nats-route://${s.host}:${s.clusterPort}"`).join(", ");
  return [
    `server_name: "${server.serverName}"`,
    `listen: "${server.listen}:${server.port}"`,
    `http: "${server.listen}:${server.httpPort}"`,
    `jetstream { store_dir: ${JSON.stringify(server.jetstreamDir)} }`,
    `cluster {`,
    `  name: "${control.cluster}"`,
    `  listen: "${server.listen}:${server.clusterPort}"`,
    `  routes: [${routes}]`,
    ...(security ? [security.cluster] : []),
    `}`,
    ...gatewayBlock(control.cluster, server.listen, server.gatewayPort, regions, control, security),
    ...(security ? [security.top] : []),
    "",
  ].join("\n");
}

/**
 * The `gateway {}` block of a server of cluster `self`: one gateway to every other region and to the
 * control log's cluster.
 */
function gatewayBlock(
  self: string,
  listen: string,
  port: number,
  regions: Readonly<Record<string, DeploymentRegion>>,
  control: ControlLogTopology | undefined,
  security: RegionSecurityText | undefined,
): string[] {
  const gateways = Object.entries(regions)
    .filter(([other]) => other !== self)
    .map(([other, o]) => `    { name: "${other}", url: "nats://${o.host}:${o.gatewayPort}" }`);
  if (control?.replicated === true && control.cluster !== self) {
    const urls = control.servers.map((s) => `"nats://${s.host}:${s.gatewayPort}"`).join(", ");
    gateways.push(`    { name: "${control.cluster}", urls: [${urls}] }`);
  }
  return [
    `gateway {`,
    `  name: "${self}"`,
    `  listen: "${listen}:${port}"`,
    `  gateways: [`,
    ...gateways,
    `  ]`,
    ...(security ? [security.gateway] : []),
    `}`,
  ];
}

/** The URL a role of this region connects to. */
export function regionUrl(r: DeploymentRegion): string {
  return `nats://${r.host}:${r.port}`;
}
