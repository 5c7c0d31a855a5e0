import { ControlFenceCode, ControlFenceError } from "./control-error.ts";
import type { ControlEvent } from "./control-event.ts";
import { inFailureDomain } from "./failure-domain.ts";
import { readAdmissionRequest } from "./admission-request.ts";
import type { ControlState, HolderRecord } from "./control-records.ts";

/**
 * Least authority in the control log: which volumes an event touches, which volumes a holder is
 * bound to, and whether a controller may commit an event. Pure.
 *
 * - An operator commits anything. A controller commits an event only when it was admitted
 *   (`admit_controller` volumes) for every volume the event touches; a controller admitted without
 *   volumes (a v1 admission, before scoping) is admitted for every volume.
 * - An event touches: the volume it names (create_obligation, hold_ranges, commit_failover,
 *   choose_persistence), its obligation's volume (transfers, releases; activate_replacement through
 *   its transfer), its hold's volume (end_hold), every volume a holder it admits, retires or fails
 *   is bound to (admit_holder, retire_holder, declare_failure, including every active holder in the
 *   declared domain), and every volume at once for a policy change (the fence of all of them).
 *   A holder's volumes are the ones admissions named for it and those of every obligation it is or
 *   was responsible in; a holder admitted unscoped (a v1 admission, before scoping) in no
 *   obligation counts as every volume, so only an operator or an unscoped controller may admit
 *   another incarnation of it, retire or fail it. An event whose target does not exist touches
 *   nothing here; the fold refuses it (`unknown_*`) and it changes nothing.
 * - A holder is bound to a volume when an admission named that volume for it, when it is or was
 *   responsible for ranges of an obligation of that volume, or when it was admitted unscoped
 *   (bound to every volume, as before scoping).
 */
export type VolumeScope = { readonly every: true } | { readonly every?: false; readonly volumes: readonly string[] };

const EVERY: VolumeScope = { every: true };
const some = (volumes: Iterable<string>): VolumeScope => ({ volumes: [...new Set(volumes)].sort() });

/** Volumes of obligations in which `holderId` is or was responsible. */
function obligationVolumes(s: ControlState, holderId: string): string[] {
  return Object.values(s.obligations)
    .filter((o) => o.responsible[holderId] !== undefined || o.released[holderId] !== undefined)
    .map((o) => o.volume);
}

/**
 * The volumes an event on holder `h` touches: named and obligation volumes; every volume for an unscoped holder in no
 * obligation.
 */
export function holderScope(s: ControlState, h: HolderRecord): VolumeScope {
  const volumes = [...(h.volumes ?? []), ...obligationVolumes(s, h.holderId)];
  return h.volumes === undefined && volumes.length === 0 ? EVERY : some(volumes);
}

/** True when `holderId` is admitted and bound to `volume` (see the module comment). */
export function isHolderBound(s: ControlState, holderId: string, volume: string): boolean {
  const h = s.holders[holderId];
  if (h === undefined) return false;
  return h.volumes === undefined || h.volumes.includes(volume) || obligationVolumes(s, holderId).includes(volume);
}

/** Throws ControlFenceError `holder_not_bound_to_volume` unless `holderId` is bound to `volume`. */
export function checkHolderBound(s: ControlState, holderId: string, volume: string, role: string): void {
  if (!isHolderBound(s, holderId, volume)) {
    throw new ControlFenceError(
      ControlFenceCode.holder_not_bound_to_volume,
      `${role} ${holderId} is not bound to volume ${volume}`,
      { holderId, volume },
    );
  }
}

/**
 * A holder's named volumes after an admission naming `named`: they add to what it had; without any
 * it keeps them, and a holder first admitted without volumes stays unscoped until some are named.
 */
export function volumesAfterAdmission(
  cur: HolderRecord | undefined,
  named: readonly string[] | undefined,
): { volumes?: readonly string[] } {
  if (named === undefined) return cur?.volumes === undefined ? {} : { volumes: cur.volumes };
  return { volumes: [...new Set([...(cur?.volumes ?? []), ...named])].sort() };
}

function union(scopes: readonly VolumeScope[]): VolumeScope {
  if (scopes.some((x) => x.every === true)) return EVERY;
  return some(scopes.flatMap((x) => (x.every === true ? [] : x.volumes)));
}

const holderIdScope = (s: ControlState, holderId: string): VolumeScope => {
  const h = s.holders[holderId];
  return h === undefined ? some([]) : holderScope(s, h);
};

/** The volumes `e` touches in state `s` (see the module comment). */
export function eventScope(s: ControlState, e: ControlEvent): VolumeScope {
  const obligationVolume = (id: string | undefined) =>
    some(id === undefined || s.obligations[id] === undefined ? [] : [s.obligations[id].volume]);
  switch (e.type) {
    case "create_obligation":
    case "hold_ranges":
    case "commit_failover":
    case "choose_persistence":
    case "claim_lease":
    case "renew_lease":
      return some([e.volume]);
    case "prepare_transfer":
    case "release_ranges":
    case "release_to_base":
      return obligationVolume(e.obligationId);
    case "activate_replacement":
      return obligationVolume(s.transfers[e.transferId]?.obligationId);
    case "end_hold": {
      const h = s.holds[e.holdId];
      return some(h === undefined ? [] : [h.volume]);
    }
    case "admit_holder": {
      const cur = s.holders[e.holderId];
      // A new holder admitted without volumes is unscoped: bound to every volume.
      if (cur === undefined) return e.volumes === undefined ? EVERY : some(e.volumes);
      return union([holderScope(s, cur), some(e.volumes ?? [])]);
    }
    case "retire_holder":
      return holderIdScope(s, e.holderId);
    case "declare_failure": {
      const hit = Object.values(s.holders).filter(
        (h) =>
          e.holderIds.includes(h.holderId) || (h.status === "active" && inFailureDomain(h.failureDomain, e.domain)),
      );
      return union(hit.map((h) => holderScope(s, h)));
    }
    case "policy_change":
      return EVERY;
    case "admit_controller":
      // Operator-only (control-trust.ts); a controller's own admission must not widen its scope.
      return EVERY;
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/**
 * True when `e` re-admits an admitted holder exactly as the holder itself asked: it carries the
 * holder's signed admission request, signed by the key the log admitted for it, naming this
 * incarnation, key and failure domain, and `e` names no volumes (the binding stays as it was).
 */
function askedByHolder(s: ControlState, e: ControlEvent): boolean {
  if (e.type !== "admit_holder" || e.request === undefined || e.volumes !== undefined) return false;
  const cur = s.holders[e.holderId];
  if (cur === undefined || !sameBytes(cur.publicKey, e.publicKey) || cur.failureDomain !== e.failureDomain)
    return false;
  try {
    const req = readAdmissionRequest(e.request);
    return (
      req.holderId === e.holderId &&
      req.incarnation === e.incarnation &&
      req.failureDomain === e.failureDomain &&
      sameBytes(req.publicKey, e.publicKey)
    );
  } catch {
    return false;
  }
}

/**
 * The volumes controller `controllerId` needs authority for to commit `e`: the volumes `e`
 * touches, except for a holder's re-admission the holder asked for itself (`askedByHolder`): a
 * holder several volumes share restarts under whichever of their controllers hears it first, so
 * the volumes it shares with that controller suffice. Without the holder's signature a controller
 * of one volume could fence a holder that other volumes rely on. Pure.
 */
export function authorityScope(s: ControlState, controllerId: string, e: ControlEvent): VolumeScope {
  const touched = eventScope(s, e);
  const admitted = s.controllers?.[controllerId]?.volumes;
  if (touched.every === true || admitted === undefined || !askedByHolder(s, e)) return touched;
  const shared = touched.volumes.filter((v) => admitted.includes(v));
  return shared.length > 0 ? some(shared) : touched;
}

/**
 * Why controller `controllerId` may not commit `e` on state `s`, or undefined when it may: its
 * admitted volumes must include every volume it needs authority for (`authorityScope`). Pure.
 */
export function volumeScopeProblem(
  s: ControlState,
  controllerId: string,
  e: ControlEvent,
): { code: ControlFenceCode; message: string } | undefined {
  const admitted = s.controllers?.[controllerId];
  if (admitted === undefined || admitted.volumes === undefined) return undefined;
  const touched = authorityScope(s, controllerId, e);
  if (touched.every === true) {
    return {
      code: ControlFenceCode.not_authorized_for_volume,
      message:
        `${e.type} by ${controllerId} touches every volume; ${controllerId} is admitted for ` +
        `${admitted.volumes.join(", ")} only`,
    };
  }
  const outside = touched.volumes.filter((v) => !admitted.volumes!.includes(v));
  if (outside.length === 0) return undefined;
  return {
    code: ControlFenceCode.not_authorized_for_volume,
    message:
      `${e.type} by ${controllerId} touches volume ${outside.join(", ")}; ${controllerId} is admitted for ` +
      `${admitted.volumes.join(", ")} only`,
  };
}
