import {
  controlPlaneSurvival,
  worseLoss,
  type ControlPlanePlacement,
  type ControlPlaneRole,
  type Loss,
  type LossKind,
  type Site,
} from "../index.ts";
import { controlLogTopology } from "./control-servers.ts";
import { CustodyError } from "../../core/index.ts";
import type { Deployment, DeploymentVolume } from "./deployment-schema.ts";

/**
 * Where a volume's control plane runs in deployment `d` (pure): the control log's replicas (a
 * replicated log's three control servers, one per region; else the single replica in the region
 * the bootstrap reaches, the first controller's) and the volume's controllers, by region.
 */
export function controlPlaneOf(d: Deployment, volume: string): ControlPlanePlacement {
  const control = controlLogTopology(d);
  const home = d.controllers[0]?.region ?? Object.keys(d.regions)[0]!;
  return {
    version: 1,
    log: d.controlRegion,
    logReplicas: control.replicated
      ? control.servers.map((s) => ({ id: s.serverName, region: s.region }))
      : [{ id: `${d.controlRegion}:${home}`, region: home }],
    controllers: d.controllers.filter((c) => c.volume === volume).map((c) => ({ id: c.id, region: c.region })),
  };
}

/**
 * The key authorities `custody init` gives a volume: one at each of its `keyAuthorities` sites
 * (default the recovery site alone); the recovery site's is `<volume>-key-authority`.
 */
export function keyAuthoritiesOf(v: DeploymentVolume): { id: string; site: string }[] {
  return (v.keyAuthorities ?? [v.recoverySite]).map((site) => ({
    id: site === v.recoverySite ? `${v.id}-key-authority` : `${v.id}-key-authority-${site}`,
    site,
  }));
}

/** A required scenario (or timeline) of a volume that loses part of its control plane. */
export interface ControlPlaneLoss {
  readonly volume: string;
  readonly scenario: string;
  readonly roles: ControlPlaneRole[];
  /** `control_plane_lost: destroys …` naming each lost role and where it ran. */
  readonly reason: string;
}

/**
 * Every required scenario and timeline of `d` that loses a volume's control-log quorum, every
 * controller of the volume, or its key authority (pure; see policies/control-plane.ts for what a
 * loss takes out).
 */
export function controlPlaneLosses(d: Deployment): ControlPlaneLoss[] {
  const siteOf = (id: string): Site => ({
    id,
    region: d.sites[id]!.region,
    az: d.sites[id]!.az,
    host: d.sites[id]!.host,
    deps: [...(d.sites[id]!.deps ?? [])],
  });
  const sites = Object.keys(d.sites).map(siteOf);
  const out: ControlPlaneLoss[] = [];
  for (const v of d.volumes) {
    const placement = controlPlaneOf(d, v.id);
    const keys = keyAuthoritiesOf(v);
    const required = [
      ...(v.scenarios ?? [])
        .filter((s) => s.required)
        .map((s) => ({ name: s.name, losses: s.losses as readonly Loss[] })),
      ...(v.timelines ?? [])
        .filter((t) => t.required)
        .map((t) => ({ name: t.name, losses: t.events.flatMap((e) => e.losses) as readonly Loss[] })),
    ];
    for (const s of required) {
      const lost = new Map<string, LossKind>();
      for (const l of s.losses) lost.set(l.domain, worseLoss(lost.get(l.domain), l.kind)!);
      const keyLost = keys.every((key) => {
        const site = siteOf(key.site);
        const domains = new Set([
          `site:${site.id}`,
          `region:${site.region}`,
          `az:${site.az}`,
          `host:${site.host}`,
          ...site.deps,
        ]);
        return [...lost].some(
          ([dom, k]) =>
            (domains.has(dom) && (k === "site_destruction" || k === "partition")) || dom === `key_authority:${key.id}`,
        );
      });
      const f = controlPlaneSurvival(placement, sites, lost, v.id, keys, keyLost);
      if (f.reason !== null) out.push({ volume: v.id, scenario: s.name, roles: f.lost, reason: f.reason });
    }
  }
  return out;
}

/** What `custody init` prints for one loss, and the way out. */
export function controlPlaneLossMessage(l: ControlPlaneLoss): string {
  const fix = l.roles.map((r) =>
    r === "controller"
      ? "add a standby controller in another region"
      : r === "quorum"
        ? "replicate the control log across 3 regions " +
          "(controlLog.replicas 3, or put the losses outside two of its first three regions)"
        : "put a key authority (volumes[].keyAuthorities) outside the scenario's losses",
  );
  const reason = l.reason.replace(/^control_plane_lost: /, "");
  return (
    `required scenario "${l.scenario}" of ${l.volume} ${reason}; ${fix.join(", ")} ` +
    "or pass --allow-control-plane-loss"
  );
}

/**
 * `custody init`'s refusal (code `control_plane_lost`) of a deployment whose required scenario
 * loses the control plane: one `error [control_plane_lost]: …` line per scenario.
 */
export class ControlPlaneLostError extends CustodyError {
  readonly losses: readonly ControlPlaneLoss[];
  constructor(losses: readonly ControlPlaneLoss[]) {
    super("control_plane_lost", losses.map(controlPlaneLossMessage).join("\nerror [control_plane_lost]: "), {
      path: "volumes",
      scenarios: losses.map((l) => `${l.volume}: ${l.scenario}`),
    });
    this.losses = losses;
  }
}
