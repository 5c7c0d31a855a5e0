import type { MetricsConfig, NatsRoleConfig } from "../../actors/runtime/index.ts";

/**
 * The `custody run` configuration objects of holders and writers, built from what a deployment
 * (or a test harness) says about them. Pure: paths are where the files will be on the machine.
 */

/** Where a role's site is (the holder config keeps region, AZ and host). */
export interface RoleSite {
  readonly region: string;
  readonly az: string;
  readonly host: string;
}

/** One lane a holder serves. */
export interface HolderLaneInput {
  readonly volume: string;
  readonly lane: string;
  readonly upstream: readonly string[];
  readonly downstream: readonly string[];
  /** A derived lane of a coalesced stream (issue #22); absent for the raw log. */
  readonly representation?: "coalesced" | undefined;
}

/** Everything a holder's role config is made of. */
export interface HolderRoleInput {
  readonly id: string;
  readonly site: RoleSite;
  readonly nats: NatsRoleConfig;
  readonly controlRegion: string;
  readonly stateDir: string;
  readonly keyFile: string;
  readonly disk: boolean;
  readonly lanes: readonly HolderLaneInput[];
  readonly metrics?: MetricsConfig | undefined;
  /** Replace holder defaults (arena, flush, receipts, ...). */
  readonly overrides?: Record<string, unknown> | undefined;
  /** The role config's `links` (link shaping, test/demo facility) and `spanFile`. */
  readonly links?: Record<string, unknown> | undefined;
  readonly spanFile?: string | undefined;
  readonly drainDeadlineMs?: number | undefined;
}

/** The optional `links` and `spanFile` keys of a role config. */
const extras = (r: { links?: Record<string, unknown> | undefined; spanFile?: string | undefined }) => ({
  ...(r.links ? { links: r.links } : {}),
  ...(r.spanFile !== undefined ? { spanFile: r.spanFile } : {}),
});

/** The `custody run holder` config: a holder with modest RAM limits, a 100 ms flush when it has a disk. */
export function holderRoleConfig(h: HolderRoleInput): Record<string, unknown> {
  const holder = {
    holderId: h.id,
    site: { region: h.site.region, az: h.site.az, host: h.site.host },
    residency: h.disk ? ["ram", "disk"] : ["ram"],
    lanes: h.lanes.map((l) => ({
      volume: l.volume,
      lane: l.lane,
      upstream: [...l.upstream],
      downstream: [...l.downstream],
      ...(l.representation !== undefined ? { representation: l.representation } : {}),
    })),
    arena: {
      segmentBytes: 256 * 1024,
      limitBytes: 32 * 1024 * 1024,
      maxOutstandingCredit: 1024 * 1024,
      maxUnitBytes: 128 * 1024,
    },
    receipts: { maxUnits: 32, maxDelayMs: 10 },
    ...(h.disk ? { flush: { intervalMs: 100, deadlineMs: 5_000 } } : {}),
    resendAfterMs: 500,
    epoch: 1,
    policyGeneration: 1,
    ...h.overrides,
  };
  return {
    role: "holder",
    nats: h.nats,
    ...(h.metrics ? { metrics: h.metrics } : {}),
    ...extras(h),
    controlRegion: h.controlRegion,
    stateDir: h.stateDir,
    keyFile: h.keyFile,
    holder,
    ...(h.drainDeadlineMs !== undefined ? { drainDeadlineMs: h.drainDeadlineMs } : {}),
  };
}

/** Everything a writer's role config is made of. */
export interface WriterRoleInput {
  readonly writerId: string;
  readonly nats: NatsRoleConfig;
  readonly controlRegion: string;
  readonly stateDir: string;
  readonly dataKeyFile: string;
  readonly volume: string;
  readonly blockCount: number;
  readonly walCapacity?: number | undefined;
  readonly lanes: readonly {
    readonly lane: string;
    readonly fromLba: number;
    readonly toLba: number;
    readonly holders: readonly string[];
  }[];
  /** Site of every holder whose receipts may count (as the policy sees sites). */
  readonly holderSites: Readonly<Record<string, unknown>>;
  readonly metrics?: MetricsConfig | undefined;
  readonly workload?: Record<string, unknown> | undefined;
  /** The volume's coalesced stream (the writer config's `coalesced`, issue #22); absent: none. */
  readonly coalesced?: Record<string, unknown> | undefined;
  readonly drainDeadlineMs?: number | undefined;
  readonly links?: Record<string, unknown> | undefined;
  readonly spanFile?: string | undefined;
}

/** The `custody run writer` config: one volume, its lanes and (optionally) a synthetic workload. */
export function writerRoleConfig(w: WriterRoleInput): Record<string, unknown> {
  return {
    role: "writer",
    nats: w.nats,
    ...(w.metrics ? { metrics: w.metrics } : {}),
    ...extras(w),
    controlRegion: w.controlRegion,
    stateDir: w.stateDir,
    dataKeyFile: w.dataKeyFile,
    volume: { blockCount: w.blockCount, ...(w.walCapacity !== undefined ? { walCapacity: w.walCapacity } : {}) },
    writer: {
      writerId: w.writerId,
      volume: w.volume,
      lanes: w.lanes.map((l) => ({ ...l, holders: [...l.holders] })),
      contracts: [],
      holderSites: w.holderSites,
      topologyEpoch: 1,
      policyGeneration: 1,
      resendAfterMs: 500,
      ...(w.coalesced !== undefined ? { coalesced: w.coalesced } : {}),
    },
    ...(w.workload ? { workload: w.workload } : {}),
    ...(w.drainDeadlineMs !== undefined ? { drainDeadlineMs: w.drainDeadlineMs } : {}),
  };
}
