import { ControlFenceCode, ControlFenceError } from "./control-error.ts";
import type { ControlEvent, ControlEventOf } from "./control-event.ts";
import { authorityScope } from "./control-scope.ts";
import type { ControlLease, ControlLeases, ControlState } from "./control-records.ts";
export type { ControlLease, ControlLeases } from "./control-records.ts";

/**
 * Control leases: which controller is the active one of a volume, decided by the control log
 * alone. Pure; nothing here reads a clock.
 *
 * - A volume nobody claimed is unleased and behaves as before leases (any controller admitted
 *   for it commits). The lease becomes mandatory with the first `claim_lease` of the volume.
 * - `claim_lease { volume, term }` makes its author the holder; the term must exceed the
 *   volume's current one (`stale_term`), so one term never has two holders. Only a controller
 *   admitted for the volume may claim (in a signed log control-trust.ts checks that; here an
 *   admitted controller's volumes must include it).
 * - Once a volume is leased, an event touching it from any controller other than the holder
 *   (an admitted controller, or one that ever claimed a lease) is refused `not_lease_holder`,
 *   whatever its clock said when it prepared it. Authors that are neither (operators, recovery
 *   runs) are not controllers and are not fenced by leases.
 * - `renew_lease { volume, term }` by the holder at the current term is a heartbeat; any other
 *   accepted event of the holder is one too (`heartbeatSeq`), so a busy controller commits no
 *   renewals. A standby decides the holder is dead or cut off when, by its own clock, it saw no
 *   heartbeat for the lease's `timeoutMs` (see actors/controller/lease-keeper.ts).
 *
 * The lease records themselves (ControlLease, ControlLeases) are in control-records.ts.
 */

/** The lease of `volume`, or undefined while it is unleased. */
export function leaseOf(s: ControlState, volume: string): ControlLease | undefined {
  return s.leases?.volumes[volume];
}

function fail(code: ControlFenceCode, message: string, detail: Record<string, unknown>): never {
  throw new ControlFenceError(code, message, detail);
}

/** Leases after a claim (checked here: term, timings, admission). `seq` is 0 when not yet known (a pre-check). */
export function claimLease(s: ControlState, e: ControlEventOf<"claim_lease">): ControlLeases {
  const cur = leaseOf(s, e.volume);
  if (e.term <= (cur?.term ?? 0))
    fail(
      ControlFenceCode.stale_term,
      `claim of ${e.volume} by ${e.controller} for term ${e.term} does not advance term ${cur?.term ?? 0} (held by ` +
        `${cur?.holder ?? "nobody"})`,
      { volume: e.volume, term: e.term, current: cur?.term ?? 0 },
    );
  if (e.renewMs === 0 || e.timeoutMs <= e.renewMs)
    fail(
      ControlFenceCode.malformed,
      `claim of ${e.volume}: timeout ${e.timeoutMs} ms must exceed renewal ${e.renewMs} ms > 0`,
      { volume: e.volume },
    );
  const admitted = s.controllers?.[e.controller];
  if (admitted?.volumes !== undefined && !admitted.volumes.includes(e.volume)) {
    fail(
      ControlFenceCode.not_authorized_for_volume,
      `${e.controller} may not claim ${e.volume}; it is admitted for ${admitted.volumes.join(", ")} only`,
      { volume: e.volume, controller: e.controller },
    );
  }
  const lease: ControlLease = {
    holder: e.controller,
    term: e.term,
    renewMs: e.renewMs,
    timeoutMs: e.timeoutMs,
    sinceSeq: 0,
    heartbeatSeq: 0,
  };
  const claimants = s.leases?.claimants.includes(e.controller)
    ? s.leases.claimants
    : [...(s.leases?.claimants ?? []), e.controller].sort();
  return { volumes: { ...s.leases?.volumes, [e.volume]: lease }, claimants };
}

/**
 * Checks a renewal: only the holder, at the current term. Changes nothing but the heartbeat (set by `noteHeartbeat`).
 */
export function checkRenewal(s: ControlState, e: ControlEventOf<"renew_lease">): void {
  const cur = leaseOf(s, e.volume);
  if (cur === undefined || cur.holder !== e.controller)
    fail(
      ControlFenceCode.not_lease_holder,
      `${e.controller} renews the lease of ${e.volume}, held by ${cur?.holder ?? "nobody"}`,
      { volume: e.volume, controller: e.controller },
    );
  if (cur.term !== e.term)
    fail(
      ControlFenceCode.stale_term,
      `${e.controller} renews ${e.volume} at term ${e.term}; the lease is at term ${cur.term}`,
      { volume: e.volume, term: e.term, current: cur.term },
    );
}

/**
 * Throws `not_lease_holder` when `e` comes from a controller and touches a leased volume whose
 * lease another controller holds (claims and renewals have their own rules, above).
 */
export function checkLeaseHolder(s: ControlState, e: ControlEvent): void {
  const leases = s.leases;
  if (leases === undefined || e.type === "claim_lease" || e.type === "renew_lease" || e.type === "admit_controller")
    return;
  const author = e.controller;
  if (s.controllers?.[author] === undefined && !leases.claimants.includes(author)) return;
  const scope = authorityScope(s, author, e);
  for (const [volume, lease] of Object.entries(leases.volumes)) {
    if (lease.holder === author) continue;
    if (scope.every === true || scope.volumes.includes(volume)) {
      fail(
        ControlFenceCode.not_lease_holder,
        `${e.type} by ${author} touches ${volume}, whose lease ${lease.holder} holds at term ${lease.term}`,
        { volume, controller: author, holder: lease.holder, term: lease.term },
      );
    }
  }
}

/**
 * Leases after an accepted entry at `seq` by `author`: its claims start there, and every lease it holds saw a
 * heartbeat.
 */
export function noteHeartbeat(
  leases: ControlLeases | undefined,
  author: string,
  seq: number,
  claimed?: string,
): ControlLeases | undefined {
  if (leases === undefined || !leases.claimants.includes(author)) return leases;
  let volumes = leases.volumes;
  for (const [volume, lease] of Object.entries(leases.volumes)) {
    if (lease.holder !== author) continue;
    volumes = {
      ...volumes,
      [volume]: { ...lease, heartbeatSeq: seq, ...(volume === claimed ? { sinceSeq: seq } : {}) },
    };
  }
  return volumes === leases.volumes ? leases : { ...leases, volumes };
}
