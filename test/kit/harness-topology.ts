import type { ControllerConfig } from "../../actors/index.ts";
import { LossKind, type Site } from "../../policies/index.ts";

/** A site of a harness deployment: one host per site, no shared dependencies. */
export function harnessSite(id: string, region: string, az: string): Site {
  return { id, region, az, host: `${id}-host`, deps: [] };
}

/** What differs between harness controllers (chaos, soak); the rest of the topology is shared. */
export interface HarnessControllerSpec {
  readonly controllerId: string;
  readonly controlRegion: string;
  readonly evalIntervalMs: number;
  readonly volume: string;
  readonly lane: string;
  /**
   * Every site, the writer's (`s-w`) and the vault's (`s-v`, holding the genesis base and the key
   * authority) included.
   */
  readonly sites: Readonly<Record<string, Site>>;
  /** holder → its site id. */
  readonly holderSites: Readonly<Record<string, string>>;
  /** Region power losses the contract covers besides each holder's crash and losing east-az1. */
  readonly powerLossRegions: readonly string[];
  readonly releasable: readonly string[];
  /** Holders that persist (their copies are released only onto disk or a base). */
  readonly durable?: readonly string[];
}

/**
 * A controller for one volume and lane with key-continuity admission and a contract of required
 * scenarios: each holder's host crashing, losing `east-az1` (the writer's AZ), and the power
 * losses named. Recovery goes to the vault.
 */
export function harnessControllerConfig(spec: HarnessControllerSpec): ControllerConfig {
  const sites = spec.sites;
  return {
    controllerId: spec.controllerId,
    region: spec.controlRegion,
    evalIntervalMs: spec.evalIntervalMs,
    admission: "key-continuity",
    topology: {
      volume: spec.volume,
      lanes: [spec.lane],
      writerSite: "s-w",
      sites: Object.values(sites),
      holderSites: { vault: "s-v", ...spec.holderSites },
      bases: [{ id: "genesis", holder: "vault", cut: { [spec.lane]: 0 }, bytes: 0 }],
      keyAuthorities: [{ id: "ka", site: "s-v" }],
      links: [],
      recovery: {
        destination: "s-v",
        detectSec: 1,
        authorizeSec: 1,
        acquireCapacitySec: 1,
        persistSec: 1,
        validateSec: 1,
      },
      scenarios: [
        ...Object.entries(spec.holderSites).map(([h, s]) => ({
          name: `crash:${h}`,
          losses: [{ domain: `host:${sites[s]!.host}`, kind: LossKind.crash }],
          deadlineSec: 3600,
          required: true,
        })),
        {
          name: "east-az1 lost",
          losses: [{ domain: "az:east-az1", kind: LossKind.siteDestruction }],
          deadlineSec: 3600,
          required: true,
        },
        ...spec.powerLossRegions.map((r) => ({
          name: `${r} power loss`,
          losses: [{ domain: `region:${r}`, kind: LossKind.powerLoss }],
          deadlineSec: 3600,
          required: true,
        })),
      ],
      timelines: [],
      staleAfterMs: 5_000,
      releasable: [...spec.releasable],
      ...(spec.durable !== undefined ? { durable: [...spec.durable] } : {}),
    },
  };
}
