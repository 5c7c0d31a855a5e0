import { LossKind } from "./scenario.ts";
import { siteDomains, type Site } from "./topology.ts";
import type { ControlPlaneMember, ControlPlanePlacement, KeyAuthority } from "./evaluation-state.ts";
export type { ControlPlaneMember, ControlPlanePlacement } from "./evaluation-state.ts";

/** Which part of the control plane a scenario loses. */
export const ControlPlaneRole = { quorum: "quorum", controller: "controller", keyAuthority: "key authority" } as const;
export type ControlPlaneRole = (typeof ControlPlaneRole)[keyof typeof ControlPlaneRole];

/** What of the control plane survives one scenario (or timeline). */
export interface ControlPlaneFinding {
  /** Replicas that survive, of how many, and the majority needed. */
  readonly logReplicas: { readonly surviving: string[]; readonly of: number; readonly quorum: number };
  /** Controllers of the volume that survive. */
  readonly controllers: string[];
  readonly keyAuthority: boolean;
  /** The roles lost, in a fixed order (empty when the control plane survives). */
  readonly lost: ControlPlaneRole[];
  /** One sentence `control_plane_lost: …` naming each lost role, or null. */
  readonly reason: string | null;
}

/** Loss kinds that take a member out: destroyed, or cut off (a partitioned quorum serves nobody). */
const TAKES_OUT = new Set<LossKind>([LossKind.siteDestruction, LossKind.partition]);

/** The failure-domain tokens that reach `m` (its site's, else its region's), plus `extra`. */
function memberDomains(m: ControlPlaneMember, sites: readonly Site[], extra: readonly string[]): ReadonlySet<string> {
  const site = m.site === undefined ? undefined : sites.find((s) => s.id === m.site);
  const out = new Set(site === undefined ? [`region:${m.region}`] : siteDomains(site));
  for (const e of extra) out.add(e);
  return out;
}

/** True when some loss that takes a member out reaches one of `domains`. */
function takenOut(domains: ReadonlySet<string>, lost: ReadonlyMap<string, LossKind>): boolean {
  for (const [d, k] of lost) if (TAKES_OUT.has(k) && domains.has(d)) return true;
  return false;
}

/** The longest reason a status document carries. */
const REASON_MAX = 256;

const where = (m: ControlPlaneMember) => `${m.id} in ${m.site ?? m.region}`;

/**
 * What of `placement` survives the losses `lost` (every lost domain token and its worst kind, as
 * a survivor view keeps them). Pure. A crash or power loss takes nothing out (processes restart,
 * a replica's disk is kept); a site destruction or partition does. The key authorities survive
 * when one of them does (`keyAuthorityLost` says how the caller judged that).
 */
export function controlPlaneSurvival(
  placement: ControlPlanePlacement,
  sites: readonly Site[],
  lost: ReadonlyMap<string, LossKind>,
  volume: string,
  keyAuthorities: readonly KeyAuthority[],
  keyAuthorityLost: boolean,
): ControlPlaneFinding {
  const replicas = placement.logReplicas.filter((r) => !takenOut(memberDomains(r, sites, []), lost));
  const quorum = Math.floor(placement.logReplicas.length / 2) + 1;
  const controllers = placement.controllers.filter(
    (c) => !takenOut(memberDomains(c, sites, [`controller:${c.id}`]), lost),
  );
  const parts: string[] = [];
  const roles: ControlPlaneRole[] = [];
  if (replicas.length < quorum) {
    roles.push(ControlPlaneRole.quorum);
    parts.push(
      `the quorum of control log ${placement.log} (${replicas.length} of ${placement.logReplicas.length} replicas ` +
        `survive, ${quorum} needed: ${placement.logReplicas.map(where).join(", ")})`,
    );
  }
  if (controllers.length === 0) {
    roles.push(ControlPlaneRole.controller);
    parts.push(
      placement.controllers.length === 0
        ? `every controller of ${volume} (it has none)`
        : `every controller of ${volume} (${placement.controllers.map(where).join(", ")})`,
    );
  }
  if (keyAuthorityLost) {
    roles.push(ControlPlaneRole.keyAuthority);
    parts.push(
      `every key authority of ${volume} (${keyAuthorities.map((k) => `${k.id} at ${k.site}`).join(", ") || "none"})`,
    );
  }
  const reason = parts.length === 0 ? null : `control_plane_lost: destroys ${parts.join("; ")}`;
  return {
    logReplicas: { surviving: replicas.map((r) => r.id), of: placement.logReplicas.length, quorum },
    controllers: controllers.map((c) => c.id),
    keyAuthority: !keyAuthorityLost,
    lost: roles,
    // A status document's reason is at most 256 characters (transport/protocol/wire/volume-status.ts).
    reason: reason === null || reason.length <= REASON_MAX ? reason : `${reason.slice(0, REASON_MAX - 1)}…`,
  };
}
