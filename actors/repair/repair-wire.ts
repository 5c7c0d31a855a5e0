import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { WireRepairAnswer, WireRepairOutcome, WireRepairView } from "../../transport/protocol/index.ts";
import type { RepairOutcome } from "./repair.machine.ts";
import type { RepairView } from "./repair-port.ts";

/**
 * Conversions between the repair protocol's wire bodies (transport/protocol/wire/repair-messages.ts) and the
 * repair's own types (range sets, infinite estimates). Pure.
 */

/** Thrown on the repair's side when the controller refused a request; `code` is the controller's. */
export class ControllerRefusedError extends CustodyError {
  constructor(code: string, message: string, detail: Record<string, unknown> = {}) {
    super(code, message, detail);
  }
}

const byHolder = (m: Readonly<Record<string, RangeSet>>) =>
  Object.entries(m).map(([holder, r]) => ({ holder, ranges: r.toJSON() }));
const fromByHolder = (a: readonly { holder: string; ranges: [number, number][] }[]) =>
  Object.fromEntries(a.map((x) => [x.holder, RangeSet.fromJSON(x.ranges)]));

/** A view as its wire body. */
export function viewToWire(v: RepairView): WireRepairView {
  return {
    holders: Object.entries(v.holders).map(([holderId, h]) => ({
      holderId,
      status: h.status,
      incarnation: h.incarnation,
    })),
    lanes: Object.entries(v.lanes).map(([lane, l]) => ({
      lane,
      released: byHolder(l.released),
      responsible: byHolder(l.responsible),
    })),
    holdings: v.holdings.map((h) => ({
      holderId: h.holderId,
      incarnation: h.incarnation,
      lane: h.lane,
      retained: h.retained.toJSON(),
      issuedAt: h.issuedAt,
    })),
    staleAfterMs: v.staleAfterMs,
    // Only the fields the kind declares (a topology may carry more): the encoder is strict.
    recovery: {
      destination: v.recovery.destination,
      detectSec: v.recovery.detectSec,
      authorizeSec: v.recovery.authorizeSec,
      acquireCapacitySec: v.recovery.acquireCapacitySec,
      persistSec: v.recovery.persistSec,
      validateSec: v.recovery.validateSec,
    },
  };
}

/** A decoded view body as the repair reads it. */
export function viewFromWire(w: WireRepairView): RepairView {
  return {
    holders: Object.fromEntries(w.holders.map((h) => [h.holderId, { status: h.status, incarnation: h.incarnation }])),
    lanes: Object.fromEntries(
      w.lanes.map((l) => [l.lane, { released: fromByHolder(l.released), responsible: fromByHolder(l.responsible) }]),
    ),
    holdings: w.holdings.map((h) => ({ ...h, retained: RangeSet.fromJSON(h.retained) })),
    staleAfterMs: w.staleAfterMs,
    recovery: w.recovery,
  };
}

/** The sequence an answer carries, or its refusal as ControllerRefusedError. */
export function seqOfAnswer(a: WireRepairAnswer): number {
  if (!a.ok)
    throw new ControllerRefusedError(
      a.code ?? "repair_request_refused",
      a.message ?? "the controller refused the request",
    );
  return a.seq ?? 0;
}

const finiteOrNull = (x: number) => (Number.isFinite(x) ? x : null);
const nullAsInfinite = (x: number | null) => (x === null ? Infinity : x);

/** An outcome as its wire body (infinite estimates as null). */
export function outcomeToWire(o: RepairOutcome): WireRepairOutcome {
  const r = o.report;
  return {
    repairId: o.repairId,
    ...(r === undefined
      ? {}
      : {
          report: {
            missing: Object.entries(r.missing).map(([lane, ranges]) => ({ lane, ranges })),
            copiedUnits: r.copiedUnits,
            copiedBytes: r.copiedBytes,
            measuredMs: r.measuredMs,
            controlSeq: r.controlSeq,
            estimate: {
              detectSec: finiteOrNull(r.estimate.detectSec),
              authorizeSec: finiteOrNull(r.estimate.authorizeSec),
              acquireCapacitySec: finiteOrNull(r.estimate.acquireCapacitySec),
              transferSec: finiteOrNull(r.estimate.transferSec),
              persistSec: finiteOrNull(r.estimate.persistSec),
              validateSec: finiteOrNull(r.estimate.validateSec),
              missingBytes: r.estimate.missingBytes,
              totalSec: finiteOrNull(r.estimate.totalSec),
            },
          },
        }),
    ...(o.failure === undefined
      ? {}
      : {
          failure: {
            step: o.failure.step.slice(0, 64),
            code: o.failure.code.slice(0, 64),
            message: o.failure.message.slice(0, 1024),
          },
        }),
  };
}

/** A decoded outcome body as the controller records it. */
export function outcomeFromWire(w: WireRepairOutcome): RepairOutcome {
  const r = w.report;
  return {
    repairId: w.repairId,
    ...(r === undefined
      ? {}
      : {
          report: {
            repairId: w.repairId,
            missing: Object.fromEntries(r.missing.map((m) => [m.lane, m.ranges])),
            copiedUnits: r.copiedUnits,
            copiedBytes: r.copiedBytes,
            measuredMs: r.measuredMs,
            controlSeq: r.controlSeq,
            estimate: {
              detectSec: nullAsInfinite(r.estimate.detectSec),
              authorizeSec: nullAsInfinite(r.estimate.authorizeSec),
              acquireCapacitySec: nullAsInfinite(r.estimate.acquireCapacitySec),
              transferSec: nullAsInfinite(r.estimate.transferSec),
              persistSec: nullAsInfinite(r.estimate.persistSec),
              validateSec: nullAsInfinite(r.estimate.validateSec),
              missingBytes: r.estimate.missingBytes,
              totalSec: nullAsInfinite(r.estimate.totalSec),
            },
          },
        }),
    ...(w.failure === undefined ? {} : { failure: w.failure }),
  };
}
