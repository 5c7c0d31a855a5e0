/**
 * The demo's deployment file as the deployment `custody init` reads (pure): the same regions,
 * sites and holders, one volume writer and one controller per volume (all controllers in the
 * controller's region, on one control log), the edges as shaped legs, each volume's custody path
 * as its holders' lanes (the comparison volume's leaves the waypoint out), the demo's scenarios,
 * and every file of the run under the run folder. `custody init` then writes every role's config.
 */
import { join } from "node:path";
import { demoContract, volumesOf, type Deployment, type DeploymentHolder } from "./deployment.ts";
import { deploymentOfVolume } from "./waypoint-variant.ts";

/** The ports of one region's nats-server. */
export interface RegionPortSet {
  readonly port: number;
  readonly httpPort: number;
  readonly clusterPort: number;
  readonly gatewayPort: number;
}

/** Name of the one control log every demo role follows (JetStream stream `CUSTODY_CTRL_demo`). */
export const DEMO_CONTROL_LOG = "demo";

/** The writer process of `volume`: one per volume, named after the deployment's writer. */
export const writerIdOf = (d: Deployment, volume: string): string => `${d.writer.id}-${volume}`;

/** The controller process of `volume`: one per volume, in the controller's region. */
export const controllerIdOf = (d: Deployment, volume: string): string => `${d.controller.id}-${volume}`;

/** Where each volume's writer logs its acknowledged writes (JSON lines, see actors/runtime/workload.ts). */
export const ackLogOf = (runDir: string, volume: string): string => join(runDir, "acks", `${volume}.jsonl`);

/** Holder `h` in the `custody init` deployment: its lanes on every volume's path, in RAM. */
function custodyHolderOf(d: Deployment, h: DeploymentHolder): Record<string, unknown> {
  const regionOf = new Map(d.sites.map((s) => [s.id, s.region]));
  const volumes = volumesOf(d);
  return {
    id: h.id,
    site: h.site,
    region: regionOf.get(h.site)!,
    residency: "ram",
    // Every volume whose custody path includes this holder, with that path's edges.
    lanes: volumes.flatMap((v) => {
      const mine = deploymentOfVolume(d, v).holders.find((x) => x.id === h.id);
      const named = (ids: readonly string[]) => ids.map((id) => (id === d.writer.id ? writerIdOf(d, v) : id));
      return mine === undefined
        ? []
        : [{ volume: v, lane: d.lane, upstream: named(mine.upstream), downstream: [...mine.downstream] }];
    }),
    // The stores keep the whole stream of every volume in RAM for the run.
    overrides: {
      arena: {
        segmentBytes: 1024 * 1024,
        limitBytes: 512 * 1024 * 1024,
        maxOutstandingCredit: 4 * 1024 * 1024,
        maxUnitBytes: 128 * 1024,
      },
      receipts: { maxUnits: 16, maxDelayMs: 5 },
    },
    // When the demo stops its survivors the run is over: nothing to wait for.
    drainDeadlineMs: 0,
  };
}

/** Volume `v` in the `custody init` deployment: its writer under the sustained workload, its lane and contract. */
function custodyVolumeOf(d: Deployment, runDir: string, v: string): Record<string, unknown> {
  const regionOf = new Map(d.sites.map((s) => [s.id, s.region]));
  const dv = deploymentOfVolume(d, v);
  return {
    id: v,
    blockCount: d.blocks,
    walCapacity: 65_536,
    writer: {
      id: writerIdOf(d, v),
      site: d.writer.site,
      region: regionOf.get(d.writer.site)!,
      // The sustained workload: it starts with the process and runs until the strike kills it.
      workload: {
        intervalMs: 0,
        ratePerSec: d.workload.writesPerSec,
        inFlight: d.workload.inFlight,
        blocksPerWrite: d.workload.blocksPerWrite,
        ackLog: ackLogOf(runDir, v),
      },
      drainDeadlineMs: 0,
    },
    lanes: [{ lane: d.lane, fromLba: 0, toLba: d.blocks - 1, firstHops: [...dv.writer.holders] }],
    recoverySite: d.recoverAt,
    genesisBases: dv.holders.filter((h) => h.baseSnapshot).map((h) => h.id),
    releasable: dv.holders.filter((h) => h.releasable).map((h) => h.id),
    ...demoContract(d),
    recoverySteps: { detectSec: 5, authorizeSec: 1, acquireCapacitySec: 2, persistSec: 1, validateSec: 1 },
  };
}

/**
 * The `custody init` deployment of demo deployment `d`, run in `runDir` with `ports` per region.
 * `secured`: TLS and an nkey user per role (the `custody init` default) or open loopback servers.
 */
export function custodyDeploymentOf(
  d: Deployment,
  runDir: string,
  ports: Readonly<Record<string, RegionPortSet>>,
  secured = true,
): Record<string, unknown> {
  const volumes = volumesOf(d);
  return {
    security: secured ? "tls-nkeys" : "none",
    controlRegion: DEMO_CONTROL_LOG,
    // The demo's launcher starts one server per region only: its control log keeps one replica
    // (a replicated log needs the 3 servers of its own cluster; see docs/deploy.md).
    controlLog: { replicas: 1 },
    paths: { stateDir: join(runDir, "state"), spanDir: join(runDir, "spans") },
    regions: Object.fromEntries(
      d.regions.map((r) => [
        r.name,
        { host: "127.0.0.1", ...ports[r.name]!, jetstreamDir: join(runDir, "nats", r.name, "jetstream") },
      ]),
    ),
    sites: Object.fromEntries(d.sites.map((s) => [s.id, { region: s.region, az: s.az, host: `${s.id}-host` }])),
    // Pairs of sites without an edge: a nominal 100 MB/s in the recovery estimate, unshaped.
    network: {
      bandwidthBytesPerSec: 100_000_000,
      shapedLinks: d.edges.map((e) => ({
        from: e.from,
        to: e.to,
        latencyMs: e.latencyMs,
        jitterMs: e.jitterMs,
        bandwidthMBps: e.bandwidthMBps,
      })),
    },
    holders: d.holders.map((h) => custodyHolderOf(d, h)),
    volumes: volumes.map((v) => custodyVolumeOf(d, runDir, v)),
    controllers: volumes.map((v) => ({
      id: controllerIdOf(d, v),
      volume: v,
      region: d.controller.region,
      evalIntervalMs: 50,
      staleAfterMs: 10_000,
    })),
  };
}
