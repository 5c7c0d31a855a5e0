/**
 * The controller part of a deployment plan: each volume's controller config and evaluation
 * topology (sites, links at the declared or shaped bandwidth, bases, scenarios, durable and
 * releasable holders, control-plane placement), and the shaped links a role's config carries.
 */
import type { ControllerConfig } from "../../actors/index.ts";
import type { Scenario, Site } from "../index.ts";
import { controlPlaneOf, keyAuthoritiesOf } from "./control-plane-placement.ts";
import { coalescedTopology } from "./deployment-coalesced.ts";
import type { Deployment, DeploymentHolder, DeploymentVolume } from "./deployment-schema.ts";
import { volumeLanes } from "./volume-lanes.ts";

/**
 * A controller for one volume: the sites of its writer, holders and recovery destination; an empty
 * genesis base (the volume before its first write) at each of the volume's disk holders unless
 * declared; the data key's authority at the recovery site; the declared scenarios or, by default,
 * each holder's host crashing.
 */
export function controllerConfig(
  d: Deployment,
  c: Deployment["controllers"][number],
  v: DeploymentVolume,
  siteOf: (id: string) => Site,
  publicKeyOf: (holder: string) => string,
): ControllerConfig {
  const hs = controllerHolders(d, v);
  return {
    controllerId: c.id,
    region: d.controlRegion,
    ...(c.evalIntervalMs !== undefined ? { evalIntervalMs: c.evalIntervalMs } : {}),
    admission: c.admission ?? "key-continuity",
    ...(c.coverageRepair !== undefined ? { coverageRepair: c.coverageRepair } : {}),
    ...(c.verdict !== undefined ? { verdict: c.verdict } : {}),
    ...(v.persistenceTargets !== undefined
      ? {
          persistenceTargets: {
            candidates: hs.holders.filter((h) => h.residency === "disk").map((h) => h.id),
            ...v.persistenceTargets,
          },
        }
      : {}),
    // Standby processes ask to be admitted; the controller takes one only when the key issued here signs the request.
    ...(hs.standby.length > 0
      ? {
          repair: {
            standby: hs.standby.map((h) => ({ holderId: h.id, site: h.site, publicKey: publicKeyOf(h.id) })),
            bandwidthBytesPerSec: d.network.bandwidthBytesPerSec,
          },
        }
      : {}),
    topology: controllerTopology(d, c, v, siteOf, hs),
  };
}

/** The holders a volume's controller knows, by what it does with them. */
interface ControllerHolders {
  /** Every holder with its sites (raw, then imaging). */
  readonly all: DeploymentHolder[];
  /** Raw-lane holders that are not standbys. */
  readonly holders: DeploymentHolder[];
  /** A coalesced stream's holders that serve no raw lane of the volume. */
  readonly imaging: DeploymentHolder[];
  readonly standby: DeploymentHolder[];
}

/**
 * Raw-lane holders decide genesis bases, persistence candidates and what is releasable; a
 * coalesced stream's holders add their sites and a crash scenario each (never standbys).
 */
function controllerHolders(d: Deployment, v: DeploymentVolume): ControllerHolders {
  const raw = d.holders.filter((h) => h.lanes.some((l) => l.volume === v.id));
  const imaging = d.holders.filter((h) => !raw.includes(h) && v.coalesced?.holders.includes(h.id) === true);
  return {
    all: [...raw, ...imaging],
    holders: raw.filter((h) => h.standby !== true),
    imaging,
    standby: raw.filter((h) => h.standby === true),
  };
}

/** The controller's evaluation topology of volume `v`. */
function controllerTopology(
  d: Deployment,
  c: Deployment["controllers"][number],
  v: DeploymentVolume,
  siteOf: (id: string) => Site,
  { all, holders, imaging }: ControllerHolders,
): ControllerConfig["topology"] {
  const coalesced = coalescedTopology(d, v);
  const lanes = volumeLanes(d, v).map((l) => l.lane);
  const genesisHolders = v.genesisBases ?? holders.filter((h) => h.residency === "disk").map((h) => h.id);
  // Key authorities and scenarios' own destinations are sites of the evaluation too.
  const siteIds = [
    ...new Set([
      v.writer.site,
      v.recoverySite,
      ...all.map((h) => h.site),
      ...keyAuthoritiesOf(v).map((k) => k.site),
      ...(v.scenarios ?? []).flatMap((s) => (s.destination === undefined ? [] : [s.destination])),
    ]),
  ];
  const scenarios: Scenario[] =
    v.scenarios?.map((s) => ({ ...s, losses: s.losses.map((l) => ({ ...l })) })) ??
    [...holders, ...imaging].map((h) => ({
      name: `crash:${h.id}`,
      losses: [{ domain: `host:${d.sites[h.site]!.host}`, kind: "crash" }],
      deadlineSec: 3600,
      required: true,
    }));
  return {
    volume: v.id,
    blockCount: v.blockCount,
    lanes,
    ...(Object.keys(coalesced).length > 0 ? { coalesced } : {}),
    writerSite: v.writer.site,
    sites: siteIds.map(siteOf),
    holderSites: Object.fromEntries(all.map((h) => [h.id, h.site])),
    bases: genesisHolders.map((h) => ({
      id: `genesis-${h}`,
      holder: h,
      cut: Object.fromEntries(lanes.map((l) => [l, 0])),
      bytes: 0,
    })),
    keyAuthorities: keyAuthoritiesOf(v),
    links: siteLinks(d, siteIds),
    recovery: {
      destination: v.recoverySite,
      ...(v.recoverySteps ?? { detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 }),
    },
    scenarios,
    timelines: (v.timelines ?? []).map((tl) => ({
      ...tl,
      events: tl.events.map((e) => ({ afterSec: e.afterSec, losses: e.losses.map((l) => ({ ...l })) })),
    })),
    staleAfterMs: c.staleAfterMs ?? 5_000,
    // Disk holders are released only onto another disk copy or a base, before their first flush too.
    durable: holders.filter((h) => h.residency === "disk").map((h) => h.id),
    // A store with a base builder beside it releases its WAL below the bases (the release rule still
    // checks every scenario).
    releasable:
      v.releasable ??
      holders
        .filter((h) => h.residency === "ram" || d.baseBuilders.some((b) => b.holder === h.id && b.volume === v.id))
        .map((h) => h.id),
    // Each scenario also says whether the control plane survives it (control-log quorum, a
    // controller, the key authority).
    controlPlane: controlPlaneOf(d, v.id),
  };
}

/**
 * Every pair of the volume's sites, both directions, at the declared bandwidth (a shaped leg's
 * own, when it has one).
 */
function siteLinks(d: Deployment, siteIds: string[]) {
  return siteIds.flatMap((a) =>
    siteIds
      .filter((b) => b !== a)
      .map((b) => ({
        id: `${a}-${b}`,
        from: a,
        to: b,
        bandwidthBytesPerSec:
          shapedLeg(d, a, b) === undefined
            ? d.network.bandwidthBytesPerSec
            : shapedLeg(d, a, b)!.bandwidthMBps * 1_000_000,
        deps: [],
      })),
  );
}

/** The shaped leg between sites `a` and `b` (declared either way round), if any. */
function shapedLeg(
  d: Deployment,
  a: string,
  b: string,
): NonNullable<Deployment["network"]["shapedLinks"]>[number] | undefined {
  return d.network.shapedLinks?.find((l) => (l.from === a && l.to === b) || (l.from === b && l.to === a));
}

/**
 * The `links` section of a role at `site` (undefined when the deployment shapes no leg): every
 * holder at another site that a shaped leg joins to this one, with that leg's shape.
 */
export function shapedLinksOf(d: Deployment, site: string): Record<string, unknown> | undefined {
  if (d.network.shapedLinks === undefined) return undefined;
  const peers: Record<string, { site: string; latencyMs: number; jitterMs?: number; bandwidthMBps: number }> = {};
  for (const h of d.holders) {
    const leg = h.site === site ? undefined : shapedLeg(d, site, h.site);
    if (leg !== undefined)
      peers[h.id] = {
        site: h.site,
        latencyMs: leg.latencyMs,
        ...(leg.jitterMs !== undefined ? { jitterMs: leg.jitterMs } : {}),
        bandwidthMBps: leg.bandwidthMBps,
      };
  }
  return { site, peers };
}
