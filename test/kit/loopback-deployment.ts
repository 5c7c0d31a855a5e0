import { join } from "node:path";
import { freePort } from "./nats-server.ts";

/** Choices of {@link loopbackDeployment}; the defaults are the deployment tests' network. */
export interface LoopbackDeploymentOptions {
  readonly volume?: string;
  readonly metrics?: boolean;
  readonly workloadIntervalMs?: number;
  readonly drainDeadlineMs?: number;
  readonly coverageGraceMs?: number;
  /** A base builder beside the west disk holder (default true). */
  readonly baseBuilder?: boolean;
  readonly extraRegions?: readonly string[];
  /**
   * The control log's replicas (`controlLog.replicas`); default as `custody init` decides: 3 with
   * 3 regions or more (each region then gets a `controlServer` on free ports), else 1.
   */
  readonly controlReplicas?: 1 | 3;
  /** A standby disk holder `h-s1` at its own east site (`s-e3`), admitted only when the controller enlists it. */
  readonly standby?: boolean;
  /**
   * A coalesced stream (issue #22): a RAM holder `h-img` at its own west site (`s-w2`) that declares
   * no lane and serves the volume's derived lane `l0-coalesced`, windows of 32 records or 500 ms.
   */
  readonly coalesced?: boolean;
  /**
   * A second volume `vol-b` on the same control log: its own writer `w2` (site `s-wb`), one RAM
   * holder `h-e2` (site `s-e2`, east) and its own controller `ctl-2` (east). One required scenario
   * (the writer's host crashing) that h-e2 alone covers. For the volume-scope tests and attacks.
   */
  readonly secondVolume?: boolean;
  /**
   * A standby controller `ctl-1b` of the volume in the west region (issue #45): both controllers
   * share the volume through the control lease, with short timings (renew 500 ms, timeout 3 s).
   */
  readonly standbyController?: boolean;
  /** Keys merged into the volume as declared (e.g. `scenarios`, `genesisBases`). */
  readonly volumeExtras?: Readonly<Record<string, unknown>>;
}

/** Short lease timings for the failover tests: a standby takes over about 3 s after the active falls silent. */
const STANDBY_LEASE = { renewMs: 500, timeoutMs: 3_000, checkMs: 250 };

/** A `metrics` section with a free port when the deployment exports metrics, or nothing. */
type MetricsSection = () => Promise<object>;

/** Every region's servers: client, monitoring, cluster and gateway ports (and its control log server's, with 3+). */
async function loopbackRegions(dir: string, regionNames: readonly string[]) {
  const ports = async () => ({
    port: await freePort(),
    httpPort: await freePort(),
    clusterPort: await freePort(),
    gatewayPort: await freePort(),
  });
  const controlServer = async (name: string) =>
    regionNames.length >= 3
      ? { controlServer: { ...(await ports()), jetstreamDir: join(dir, "js", `${name}-control`) } }
      : {};
  const region = async (name: string) => ({
    host: "127.0.0.1",
    ...(await ports()),
    jetstreamDir: join(dir, "js", name),
    ...(await controlServer(name)),
  });
  return Object.fromEntries(await Promise.all(regionNames.map(async (r) => [r, await region(r)] as const)));
}

/** The sites: writer, holders and the vault, plus those the options' extra roles run at. */
function loopbackSites(o: LoopbackDeploymentOptions) {
  return {
    "s-w": { region: "east", az: "east-az1", host: "w-host" },
    "s-e1": { region: "east", az: "east-az2", host: "e1-host" },
    "s-w1": { region: "west", az: "west-az1", host: "w1-host" },
    "s-vault": { region: "vault", az: "vault-az1", host: "vault-host" },
    ...(o.standby ? { "s-e3": { region: "east", az: "east-az3", host: "e3-host" } } : {}),
    ...(o.coalesced ? { "s-w2": { region: "west", az: "west-az2", host: "w2-host" } } : {}),
    ...(o.secondVolume
      ? {
          "s-wb": { region: "east", az: "east-az1", host: "wb-host" },
          "s-e2": { region: "east", az: "east-az4", host: "e2-host" },
        }
      : {}),
  };
}

/** The holders: h-e1 (RAM, east) and h-w1 (disk, west), and those the options add. */
async function loopbackHolders(volume: string, o: LoopbackDeploymentOptions, metrics: MetricsSection) {
  return [
    {
      id: "h-e1",
      site: "s-e1",
      region: "east",
      residency: "ram",
      lanes: [{ volume, lane: "l0", upstream: ["w1"] }],
      ...(await metrics()),
    },
    {
      id: "h-w1",
      site: "s-w1",
      region: "west",
      residency: "disk",
      lanes: [{ volume, lane: "l0", upstream: ["w1"] }],
      ...(await metrics()),
    },
    ...(o.standby
      ? [
          {
            id: "h-s1",
            site: "s-e3",
            region: "east",
            residency: "disk",
            standby: true,
            lanes: [{ volume, lane: "l0", upstream: ["w1"] }],
            ...(await metrics()),
          },
        ]
      : []),
    // Its windows are released only once a base contains them: without a base builder it would
    // wait its whole drain deadline on SIGTERM for nothing.
    ...(o.coalesced
      ? [
          {
            id: "h-img",
            site: "s-w2",
            region: "west",
            residency: "ram",
            lanes: [],
            drainDeadlineMs: 0,
            ...(await metrics()),
          },
        ]
      : []),
    // vol-b's only holder, in RAM: with no disk holder or base to release onto, nothing of it is
    // ever released, so it too would wait its whole drain deadline on SIGTERM for nothing.
    ...(o.secondVolume
      ? [
          {
            id: "h-e2",
            site: "s-e2",
            region: "east",
            residency: "ram",
            lanes: [{ volume: "vol-b", lane: "l0", upstream: ["w2"] }],
            drainDeadlineMs: 0,
            ...(await metrics()),
          },
        ]
      : []),
  ];
}

/** The volume (and with `secondVolume`, vol-b) with its writer and workload. */
async function loopbackVolumes(volume: string, o: LoopbackDeploymentOptions, metrics: MetricsSection) {
  return [
    {
      id: volume,
      blockCount: 256,
      writer: {
        id: "w1",
        site: "s-w",
        region: "east",
        ...(await metrics()),
        workload: { intervalMs: o.workloadIntervalMs ?? 20 },
        drainDeadlineMs: o.drainDeadlineMs ?? 10_000,
      },
      recoverySite: "s-vault",
      ...(o.coalesced ? { coalesced: { holders: ["h-img"], windowRecords: 32, windowMs: 500 } } : {}),
      ...o.volumeExtras,
    },
    ...(o.secondVolume
      ? [
          {
            id: "vol-b",
            blockCount: 256,
            writer: {
              id: "w2",
              site: "s-wb",
              region: "east",
              ...(await metrics()),
              workload: { intervalMs: 200 },
              drainDeadlineMs: o.drainDeadlineMs ?? 10_000,
            },
            recoverySite: "s-vault",
            scenarios: [
              {
                name: "crash:w2",
                losses: [{ domain: "host:wb-host", kind: "crash" }],
                deadlineSec: 3600,
                required: true,
              },
            ],
          },
        ]
      : []),
  ];
}

/** The controllers: ctl-1, a standby ctl-1b and vol-b's ctl-2 when the options ask for them. */
async function loopbackControllers(volume: string, o: LoopbackDeploymentOptions, metrics: MetricsSection) {
  return [
    {
      id: "ctl-1",
      volume,
      region: "east",
      evalIntervalMs: 100,
      ...(await metrics()),
      ...(o.coverageGraceMs !== undefined ? { coverageRepair: { graceMs: o.coverageGraceMs } } : {}),
      ...(o.standbyController ? { lease: STANDBY_LEASE } : {}),
    },
    ...(o.standbyController
      ? [{ id: "ctl-1b", volume, region: "west", evalIntervalMs: 100, ...(await metrics()), lease: STANDBY_LEASE }]
      : []),
    ...(o.secondVolume
      ? [{ id: "ctl-2", volume: "vol-b", region: "east", evalIntervalMs: 100, ...(await metrics()) }]
      : []),
  ];
}

/**
 * A two-region `custody init` deployment file on loopback: east (writer, a RAM holder, the
 * controller) and west (a disk holder, by default with a base builder beside it). Both holders are
 * first hops of the writer. Every port is a free loopback port; JetStream lives under `dir`.
 * `extraRegions` adds NATS regions with no role in them; with 3 regions or more each also gets the
 * ports of its control log server (used when the log is replicated). Used by the deployment tests and the
 * attack harness.
 */
export async function loopbackDeployment(
  dir: string,
  o: LoopbackDeploymentOptions = {},
): Promise<Record<string, unknown>> {
  const volume = o.volume ?? "vol-d";
  const regionNames = ["east", "west", ...(o.extraRegions ?? [])];
  const metrics = async () => (o.metrics ? { metrics: { port: await freePort() } } : {});
  return {
    controlRegion: "ctl",
    ...(o.controlReplicas !== undefined ? { controlLog: { replicas: o.controlReplicas } } : {}),
    regions: await loopbackRegions(dir, regionNames),
    sites: loopbackSites(o),
    network: { bandwidthBytesPerSec: 125_000_000 },
    holders: await loopbackHolders(volume, o, metrics),
    volumes: await loopbackVolumes(volume, o, metrics),
    controllers: await loopbackControllers(volume, o, metrics),
    ...(o.baseBuilder === false
      ? {}
      : {
          baseBuilders: [
            { holder: "h-w1", volume, lane: "l0", intervalMs: 1_000, minNewSeqs: 64, ...(await metrics()) },
          ],
        }),
  };
}
