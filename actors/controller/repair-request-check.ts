import { CustodyError } from "../../core/index.ts";
import type { ReplacementAdmission } from "../repair/index.ts";

/**
 * Which requests on the repair subjects the controller answers: only those of a repair it handed
 * to a worker and that is still running, and only within what it handed out (its lanes, its failed
 * holders, its replacement). Pure. Whoever may publish there (transport/security/ lets only the repair
 * principal and the controller) still cannot admit another key or move another holder's custody.
 */

/** A repair this controller handed to a worker: what requests for it may touch. */
export interface DelegatedRepair {
  readonly repairId: string;
  readonly lanes: readonly string[];
  readonly failed: readonly string[];
  readonly replacement: ReplacementAdmission;
}

/** Thrown (and answered, and counted as `repair_request_refused`) for a request outside its repair. */
export class RepairRequestRefusedError extends CustodyError {
  constructor(reason: string, detail: Record<string, unknown>) {
    super("repair_request_refused", `repair request refused: ${reason}`, { reason, ...detail });
  }
}

/** A decoded repair request, by op. */
export type RepairRequest =
  | { readonly op: "view"; readonly repairId: string; readonly lanes: readonly string[] }
  | { readonly op: "admit"; readonly repairId: string; readonly replacement: ReplacementAdmission }
  | {
      readonly op: "activate";
      readonly repairId: string;
      readonly transferId: string;
      readonly lane: string;
      readonly fromHolder: string;
      readonly toHolder: string;
    }
  | { readonly op: "protect"; readonly repairId: string; readonly id: string; readonly lane: string }
  | { readonly op: "unprotect"; readonly repairId: string; readonly id: string };

const sameKey = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);

/** Returns the delegated repair `req` belongs to; throws RepairRequestRefusedError otherwise. */
export function checkRepairRequest(open: ReadonlyMap<string, DelegatedRepair>, req: RepairRequest): DelegatedRepair {
  const r = open.get(req.repairId);
  const refuse = (reason: string, detail: Record<string, unknown> = {}) =>
    new RepairRequestRefusedError(reason, { repairId: req.repairId, op: req.op, ...detail });
  if (r === undefined) throw refuse("no such repair is running");
  const laneOk = (lane: string) => r.lanes.includes(lane);
  switch (req.op) {
    case "view":
      if (!req.lanes.every(laneOk)) throw refuse("a lane outside the repair", { lanes: req.lanes });
      return r;
    case "admit": {
      const a = req.replacement;
      const b = r.replacement;
      if (
        a.holderId !== b.holderId ||
        a.incarnation !== b.incarnation ||
        a.failureDomain !== b.failureDomain ||
        !sameKey(a.publicKey, b.publicKey)
      )
        throw refuse("not the replacement this repair was given", { holderId: a.holderId });
      return r;
    }
    case "activate":
      if (!laneOk(req.lane)) throw refuse("a lane outside the repair", { lane: req.lane });
      if (!r.failed.includes(req.fromHolder))
        throw refuse("custody moved from a holder that did not fail", { fromHolder: req.fromHolder });
      if (req.toHolder !== r.replacement.holderId)
        throw refuse("custody moved to a holder that is not the replacement", { toHolder: req.toHolder });
      if (req.transferId !== `${r.repairId}-${req.lane}-${req.fromHolder}`)
        throw refuse("a transfer id outside the repair", { transferId: req.transferId });
      return r;
    case "protect":
      if (!laneOk(req.lane) || req.id !== `${r.repairId}-${req.lane}`)
        throw refuse("a protection outside the repair", { id: req.id, lane: req.lane });
      return r;
    case "unprotect":
      if (!r.lanes.some((l) => req.id === `${r.repairId}-${l}`))
        throw refuse("a protection outside the repair", { id: req.id });
      return r;
  }
}
