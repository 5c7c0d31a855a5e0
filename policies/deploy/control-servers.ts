import type { Deployment, DeploymentRegion } from "./deployment-schema.ts";
import { controlClusterName } from "./control-cluster-name.ts";

/**
 * Where a deployment's control log lives (pure).
 *
 * Replicated (3 regions or more, the default): a dedicated JetStream cluster of three servers,
 * one in each of the first three regions, joined to each other by routes and to every region by
 * gateways; the control stream is placed on it (`placement.cluster`) with 3 replicas. Why a
 * cluster of its own: on nats-server 2.9 a stream's replicas all live in one cluster, and each
 * region is a one-server cluster, so no region's cluster can hold 3 copies in 3 regions. Losing
 * one region loses one replica: the other two elect a leader and the log stays readable and
 * writable with every acknowledged entry (an ack means a majority stored it).
 *
 * Single (fewer than 3 regions, or `controlLog.replicas: 1`): one replica on the server the
 * bootstrap reaches, as before; the loss of that region loses the log. `warning` says so.
 */
export type ControlLogTopology =
  | { readonly replicated: false; readonly replicas: 1; readonly warning?: string }
  | {
      readonly replicated: true;
      readonly replicas: 3;
      readonly cluster: string;
      readonly servers: readonly ControlServer[];
    };

/** One replica server of a replicated control log, in region `region`. */
export interface ControlServer {
  readonly region: string;
  /** `server_name`: `<cluster>-<region>`. */
  readonly serverName: string;
  readonly host: string;
  readonly listen: string;
  readonly port: number;
  readonly httpPort: number;
  readonly clusterPort: number;
  readonly gatewayPort: number;
  readonly jetstreamDir: string;
}

/** Replicas of a replicated control log: a majority (2) survives the loss of any one region. */
export const CONTROL_LOG_REPLICAS = 3;

/** The control log's topology for `d` (see ControlLogTopology). */
export function controlLogTopology(d: Deployment): ControlLogTopology {
  const regions = Object.entries(d.regions);
  const replicas = d.controlLog?.replicas ?? (regions.length >= CONTROL_LOG_REPLICAS ? CONTROL_LOG_REPLICAS : 1);
  if (replicas === 1) {
    const why =
      regions.length < CONTROL_LOG_REPLICAS
        ? `the deployment has ${regions.length} region${regions.length === 1 ? "" : "s"} ` +
          "and a replicated control log needs 3"
        : "controlLog.replicas is 1";
    // The bootstrap (the operator's connection) reaches the first controller's region: the stream is stored there.
    const home = d.controllers[0]?.region ?? regions[0]![0];
    const promised = d.volumes.flatMap((v) =>
      (v.scenarios ?? [])
        .filter((x) => x.required && x.losses.some((l) => l.domain === `region:${home}`))
        .map((x) => `${v.id}: ${x.name}`),
    );
    const breaks = promised.length > 0 ? `; required scenarios that lose it: ${promised.join(", ")}` : "";
    return {
      replicated: false,
      replicas: 1,
      warning:
        `control log ${d.controlRegion} has a single replica (${why}): ` +
        `losing the region whose server stores it (${home}) loses the log${breaks}`,
    };
  }
  const cluster = controlClusterName(d.controlRegion);
  return {
    replicated: true,
    replicas: CONTROL_LOG_REPLICAS,
    cluster,
    servers: regions.slice(0, CONTROL_LOG_REPLICAS).map(([name, r]) => controlServerOf(cluster, name, r)),
  };
}

/** The replica server in region `name`: as declared, or at the region's ports + 1. */
function controlServerOf(cluster: string, name: string, r: DeploymentRegion): ControlServer {
  const c = r.controlServer ?? {
    port: r.port + 1,
    httpPort: r.httpPort + 1,
    clusterPort: r.clusterPort + 1,
    gatewayPort: r.gatewayPort + 1,
    jetstreamDir: `${r.jetstreamDir}-control`,
  };
  return { region: name, serverName: `${cluster}-${name}`, host: r.host, listen: r.listen ?? r.host, ...c };
}
