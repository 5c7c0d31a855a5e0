import { seededRandom, type Random } from "../core/index.ts";
import { LossKind, type Scenario, type Site } from "../policies/index.ts";
import { generateFaultSchedule, type FaultEvent } from "./fault-schedule.ts";
import type { EventTrace } from "./event-trace.ts";
import { SimNetwork, type EdgeProfile } from "./sim-network.ts";
import type { SimulatedClock } from "./simulated-clock.ts";
import { SimArgumentError } from "./sim-argument-error.ts";

/** One custody holder of the simulated world (the writer is described separately). */
export interface HolderSpec {
  readonly id: string;
  readonly site: string;
  /** Persists what it admits to disk every `flushMs`. */
  readonly disk: boolean;
  /** Its RAM is protected (battery/capacitor hold-up) while evidence stays valid. */
  readonly protectedRam: boolean;
  /** It asks to release everything older than its newest `keepUnits` units. */
  readonly keepUnits: number;
  /** Holders it forwards to (the custody graph is a DAG in id order). */
  readonly downstream: readonly string[];
}

/** Timing of the world's protocol (virtual ms). */
export interface WorldTiming {
  readonly receiptMs: number;
  readonly evalMs: number;
  readonly retryMs: number;
  readonly flushMs: number;
  readonly suspectMs: number;
  /** Repair budget: faults further apart than this are within the contract. */
  readonly settleMs: number;
  readonly restartMs: number;
  readonly durationMs: number;
  readonly creditWindow: number;
}

/** Everything a run needs, derived from one seed. Plain data: print it to reproduce a run by hand. */
export interface WorldSpec {
  readonly seed: number;
  readonly volume: string;
  readonly lane: string;
  readonly sites: readonly Site[];
  readonly writer: {
    readonly id: string;
    readonly site: string;
    readonly keepUnits: number;
    readonly downstream: readonly string[];
  };
  readonly holders: readonly HolderSpec[];
  /** Never struck: holds the base snapshot and the key authority, and is the recovery destination. */
  readonly vault: { readonly holder: string; readonly site: string };
  readonly scenarios: readonly Scenario[];
  readonly workload: { readonly intervalMs: number; readonly bytesPerUnit: number };
  readonly timing: WorldTiming;
  /** Edge profile per directed site pair `from>to`. */
  readonly edges: Readonly<Record<string, EdgeProfile>>;
  readonly faults: readonly FaultEvent[];
  /** A standby controller shares the volume with the active one through the control lease (sim/controller-pair.ts). */
  readonly failover?: boolean;
}

/** Options that override what the seed would choose. */
export interface WorldOverrides {
  /** Number of holders (1–10). */
  holders?: number;
  /** Replace the drawn fault schedule (used by the minimizer). */
  faults?: readonly FaultEvent[];
  durationMs?: number;
  /** Run a standby controller beside the active one (and draw pauses of the active into the faults). */
  failover?: boolean;
}

const REGIONS = ["use1", "usw2", "euc1"] as const;

/** The sites (the writer's, one per holder, the vault), the holders and the custody graph between them. */
function worldTopology(topo: Random, k: number) {
  const regions = REGIONS.slice(0, topo.int(1, 3));
  const azs = regions.flatMap((r) => Array.from({ length: topo.int(1, 3) }, (_, i) => `${r}-az${i + 1}`));
  const regionOf = (az: string) => az.slice(0, az.indexOf("-az"));
  const sites: Site[] = [];
  const addSite = (id: string, az: string): Site => {
    const s: Site = { id, region: regionOf(az), az, host: `host-${id}`, deps: [] };
    sites.push(s);
    return s;
  };
  const writerSite = addSite("s-writer", azs[0]!);
  const holders: HolderSpec[] = [];
  const downstream = new Map<string, string[]>([["writer", []]]);
  const ids = Array.from({ length: k }, (_, i) => `h${i + 1}`);
  ids.forEach((id, i) => {
    const site = addSite(`s-${id}`, topo.pick(azs));
    // Each holder hangs off the writer or an earlier holder; a few get a second parent (fan-in).
    const parents = ["writer", ...ids.slice(0, i)];
    const p = topo.pick(parents);
    downstream.get(p)!.push(id);
    if (parents.length > 1 && topo.chance(0.25)) {
      const q = topo.pick(parents);
      if (q !== p) downstream.get(q)!.push(id);
    }
    downstream.set(id, []);
    holders.push({
      id,
      site: site.id,
      disk: topo.chance(0.4),
      protectedRam: topo.chance(0.3),
      keepUnits: topo.int(0, 20),
      downstream: [],
    });
  });
  const vault: Site = { id: "s-vault", region: "vault", az: "vault-az1", host: "host-vault", deps: [] };
  sites.push(vault);
  const finalHolders = holders.map((h) => ({ ...h, downstream: [...downstream.get(h.id)!] }));
  return { regions, sites, writerSite, vault, finalHolders, downstream };
}

/** The contract: every host may crash; the writer's AZ may be destroyed; its region may lose power. */
function contractScenarios(writerSite: Site, finalHolders: readonly HolderSpec[], regionCount: number): Scenario[] {
  const scenarios: Scenario[] = [
    {
      name: "crash:writer",
      losses: [{ domain: `host:${writerSite.host}`, kind: LossKind.crash }],
      deadlineSec: 3600,
      required: true,
    },
    ...finalHolders.map((h) => ({
      name: `crash:${h.id}`,
      losses: [{ domain: `host:host-${h.site}`, kind: LossKind.crash }],
      deadlineSec: 3600,
      required: true,
    })),
    {
      name: `destroy:${writerSite.az}`,
      losses: [{ domain: `az:${writerSite.az}`, kind: LossKind.siteDestruction }],
      deadlineSec: 3600,
      required: true,
    },
  ];
  if (regionCount > 1) {
    scenarios.push({
      name: `power:${writerSite.region}`,
      losses: [{ domain: `region:${writerSite.region}`, kind: LossKind.powerLoss }],
      deadlineSec: 3600,
      required: true,
    });
  }
  return scenarios;
}

/** Every ordered pair of sites gets a link profile: faster and steadier the closer they are. */
function edgeProfiles(net: Random, sites: readonly Site[]): Record<string, EdgeProfile> {
  const edges: Record<string, EdgeProfile> = {};
  for (const a of sites) {
    for (const b of sites) {
      const sameAz = a.az === b.az;
      const sameRegion = a.region === b.region;
      const base = a.id === b.id ? 0.05 : sameAz ? 0.3 : sameRegion ? 1.5 : 40 + net.int(0, 60);
      edges[`${a.id}>${b.id}`] = {
        latencyMs: base,
        jitterMs: sameRegion ? net.next() * 2 : net.next() * 20,
        bandwidthBytesPerSec: sameRegion ? 1e9 : net.pick([50e6, 100e6, 1e9]),
        loss: net.chance(0.3) ? net.next() * 0.05 : 0,
        duplicate: net.chance(0.2) ? net.next() * 0.03 : 0,
        reorder: net.chance(0.2) ? net.next() * 0.05 : 0,
        reorderWindowMs: 20,
      };
    }
  }
  return edges;
}

function worldTiming(tim: Random, overrides: WorldOverrides): WorldTiming {
  return {
    receiptMs: tim.int(50, 400),
    evalMs: tim.int(500, 2_000),
    retryMs: tim.int(100, 500),
    flushMs: tim.int(20, 500),
    suspectMs: 2_500,
    settleMs: 8_000,
    restartMs: tim.int(200, 2_000),
    durationMs: overrides.durationMs ?? 24_000,
    creditWindow: tim.int(2, 32),
  };
}

/**
 * Builds the world of `seed`: 1–10 holders across regions/AZs/hosts, the custody graph, the
 * contract (required scenarios), workload, edge profiles and fault schedule. Every choice comes
 * from forks of one seeded Random, so the same seed (and overrides) always yields the same spec.
 * Throws SimArgumentError for a holder count outside 1..10.
 */
export function buildWorld(seed: number, overrides: WorldOverrides = {}): WorldSpec {
  const root = seededRandom(seed);
  const topo = root.fork("topology");
  const k = overrides.holders ?? topo.int(1, 10);
  if (!Number.isInteger(k) || k < 1 || k > 10)
    throw new SimArgumentError(`holders must be 1..10, got ${k}`, { holders: k });
  const { regions, sites, writerSite, vault, finalHolders, downstream } = worldTopology(topo, k);
  const scenarios = contractScenarios(writerSite, finalHolders, regions.length);
  const edges = edgeProfiles(root.fork("network"), sites);
  const timing = worldTiming(root.fork("timing"), overrides);
  const workload = {
    intervalMs: root.fork("workload").int(40, 250),
    bytesPerUnit: root.fork("workload").pick([512, 4096, 65536]),
  };
  const faults =
    overrides.faults ??
    generateFaultSchedule(root.fork("faults"), {
      durationMs: timing.durationMs,
      scenarios,
      protectedHolders: finalHolders.filter((h) => h.protectedRam).map((h) => h.id),
      sites: sites.filter((s) => s.id !== vault.id).map((s) => s.id),
      settleMs: timing.settleMs,
      ...(overrides.failover === true ? { failover: true } : {}),
      holders: finalHolders.map((h) => h.id),
      writeIntervalMs: workload.intervalMs,
    });
  return {
    seed,
    volume: "vol1",
    lane: "l0",
    sites,
    writer: {
      id: "writer",
      site: writerSite.id,
      keepUnits: root.fork("writer").int(0, 40),
      downstream: [...downstream.get("writer")!],
    },
    holders: finalHolders,
    vault: { holder: "vault", site: vault.id },
    scenarios,
    workload,
    timing,
    edges,
    faults,
    ...(overrides.failover === true ? { failover: true } : {}),
  };
}

/** The Random stream a component of the run of `spec` uses (one fork per component). */
export function runRandom(spec: WorldSpec, component: string): Random {
  return seededRandom(spec.seed).fork("run").fork(component);
}

/** The world overrides carried by a run's options (absent fields keep what the seed chooses). */
export function overridesOf(o: {
  holders?: number;
  faults?: readonly FaultEvent[];
  durationMs?: number;
  failover?: boolean;
}): WorldOverrides {
  return {
    ...(o.failover === true ? { failover: true } : {}),
    ...(o.holders !== undefined ? { holders: o.holders } : {}),
    ...(o.faults !== undefined ? { faults: o.faults } : {}),
    ...(o.durationMs !== undefined ? { durationMs: o.durationMs } : {}),
  };
}

/**
 * The SimNetwork of `spec`'s run: its edge profiles, its own seeded stream, and every network
 * event hashed into `trace` at virtual time relative to `epochMs`.
 */
export function networkFor(spec: WorldSpec, clock: SimulatedClock, trace: EventTrace, epochMs = 0): SimNetwork {
  const net = new SimNetwork({
    clock,
    random: runRandom(spec, "network"),
    onEvent: (e) => trace.hashNet(e.atMs - epochMs, e.kind, e.from, e.to, e.subject),
  });
  for (const [key, profile] of Object.entries(spec.edges)) {
    const [from, to] = key.split(">") as [string, string];
    net.setEdge(from, to, profile);
  }
  return net;
}
