import { unitRecordBytes } from "../../arena/segment.ts";
import type { Clock } from "../../core/clock.ts";
import { CustodyError } from "../../core/custody-error.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import { transferSubject } from "../../transport/subjects.ts";
import type { Transport } from "../../transport/transport.ts";
import { encodeMessage, unitSpec } from "../../transport/wire/index.ts";
import { obligationIdOf } from "../controller/controller-config.ts";
import type { ControllerCore, HolderAdmission } from "../controller/controller-core.ts";
import { transferOfferSpec } from "../holder/holder-messages.ts";
import type { SurvivorSource } from "./survivor-source.ts";

/** Thrown when survivors no longer hold a range the repair must copy (that coverage is lost). */
export class RepairSourceLostError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("repair_source_lost", "no survivor retains part of the missing coverage", detail);
  }
}

/** Thrown when the replacement's receipts do not cover the copied ranges in time. */
export class RepairTimeoutError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("repair_timeout", "the replacement holder did not receipt the copied ranges in time", detail);
  }
}

/** Everything a repair task works with. */
export interface RepairInput {
  readonly repairId: string;
  readonly volume: string;
  readonly lanes: readonly string[];
  /** Holders the declare-failure event named (their coverage is what is missing). */
  readonly failed: readonly string[];
  readonly replacement: HolderAdmission;
  readonly survivors: readonly SurvivorSource[];
  readonly controller: ControllerCore;
  readonly transport: Transport;
  readonly clock: Clock;
  /** Bandwidth assumed for the estimate (bytes/s). */
  readonly repairBandwidthBytesPerSec: number;
  readonly receiptTimeoutMs?: number;
}

/**
 * Lane → ranges the failed holders were still covering: what their last receipts retained, minus
 * what the control log had already released for them (that coverage was judged redundant).
 */
export function missingCoverage(inp: RepairInput): Record<string, RangeSet> {
  const out: Record<string, RangeSet> = {};
  const s = inp.controller.follower.state;
  for (const lane of inp.lanes) {
    const released = s.obligations[obligationIdOf(inp.volume, lane)]?.released ?? {};
    let r = RangeSet.EMPTY;
    for (const h of inp.failed) {
      for (const x of inp.controller.ledger.holdings({ volume: inp.volume, lane, holderId: h })) r = r.union(x.retained.subtract(released[h] ?? RangeSet.EMPTY));
    }
    out[lane] = r;
  }
  return out;
}

/** Commits `admit_holder` for the replacement (acquiring capacity through the control log). */
export async function admitReplacement(inp: RepairInput): Promise<number> {
  const { seq } = await inp.controller.commit(() => ({ type: "admit_holder", ...inp.replacement }));
  return seq;
}

/**
 * Copies the missing ranges from survivors to the replacement as transfer offers. Every unit's
 * digest is validated before it is offered; returns the units and bytes copied. Throws
 * RepairSourceLostError when survivors lack part of a missing range.
 */
export function copyMissing(inp: RepairInput, missing: Record<string, RangeSet>): { units: number; bytes: number } {
  let units = 0;
  let bytes = 0;
  for (const [lane, ranges] of Object.entries(missing)) {
    if (ranges.isEmpty) continue;
    const got = new Map<number, TransportUnit>();
    for (const s of inp.survivors) for (const u of s.units(inp.volume, lane, ranges)) if (!got.has(u.firstSeq)) got.set(u.firstSeq, validateTransportUnit(u));
    let covered = RangeSet.EMPTY;
    for (const u of got.values()) covered = covered.add(u.firstSeq, u.lastSeq);
    if (!covered.coversAll(ranges)) throw new RepairSourceLostError({ lane, missing: ranges.subtract(covered).toJSON() });
    const list = [...got.values()].sort((a, b) => a.firstSeq - b.firstSeq);
    let offerId = 0;
    for (let i = 0; i < list.length; ) {
      const chunk: Uint8Array[] = [];
      let size = 0;
      while (i < list.length && chunk.length < 256 && size < 4 * 1024 * 1024) {
        const enc = encodeMessage(unitSpec, list[i]!);
        chunk.push(enc);
        size += enc.length;
        bytes += unitRecordBytes(list[i]!);
        units++;
        i++;
      }
      inp.transport.publish(
        transferSubject(inp.replacement.holderId),
        encodeMessage(transferOfferSpec, { from: inp.repairId, to: inp.replacement.holderId, volume: inp.volume, lane, offerId: ++offerId, units: chunk }),
      );
    }
  }
  return { units, bytes };
}

/** Resolves once the controller's ledger shows the replacement retaining every missing range. */
export function awaitReplacementReceipts(inp: RepairInput, missing: Record<string, RangeSet>): Promise<void> {
  const until = inp.clock.now() + (inp.receiptTimeoutMs ?? 10_000);
  return new Promise((resolve, reject) => {
    const check = () => {
      const ok = Object.entries(missing).every(([lane, ranges]) => {
        let r = RangeSet.EMPTY;
        for (const h of inp.controller.ledger.holdings({ volume: inp.volume, lane, holderId: inp.replacement.holderId })) r = r.union(h.retained);
        return r.coversAll(ranges);
      });
      if (ok) return resolve();
      if (inp.clock.now() > until) return reject(new RepairTimeoutError({ replacement: inp.replacement.holderId }));
      inp.clock.setTimeout(check, 10);
    };
    check();
  });
}

/**
 * Makes the replacement responsible for what the failed holders were responsible for (prepare
 * and activate a transfer per failed holder and lane), so the controller may re-authorize releases
 * that relied on the lost copies. Returns the last committed sequence.
 */
export async function activateReplacement(inp: RepairInput, missing: Record<string, RangeSet>): Promise<number> {
  let last = 0;
  for (const lane of inp.lanes) {
    const obligationId = obligationIdOf(inp.volume, lane);
    for (const from of inp.failed) {
      const o = inp.controller.follower.state.obligations[obligationId];
      const resp = o?.responsible[from];
      const ranges = resp?.intersect(missing[lane] ?? RangeSet.EMPTY);
      if (ranges === undefined || ranges.isEmpty) continue;
      const transferId = `${inp.repairId}-${lane}-${from}`;
      await inp.controller.commit(() => ({ type: "prepare_transfer", transferId, obligationId, fromHolder: from, toHolder: inp.replacement.holderId, ranges }));
      last = (await inp.controller.commit(() => ({ type: "activate_replacement", transferId }))).seq;
    }
  }
  return last;
}
