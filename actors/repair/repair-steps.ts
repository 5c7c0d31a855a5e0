import type { Clock } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { Transport } from "../../transport/index.ts";
import { obligationIdOf } from "../controller/controller-config.ts";
import type { ControllerCore } from "../controller/controller-core.ts";
import type { HolderAdmission } from "../controller/controller-ports.ts";
import { copyOverNats } from "./copy-over-nats.ts";
import { HolderStatus } from "../../custody/index.ts";

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
 * Copies the missing ranges to the replacement over NATS: units are read from the holders the
 * ledger shows retaining them (fresh receipts of active, admitted incarnations; the failed ones
 * and the replacement excluded) and offered to the replacement, which admits and receipts them
 * itself. Returns the units and bytes copied. Throws RepairSourceLostError when no survivor could
 * serve part of a missing range.
 */
export async function copyMissing(inp: RepairInput, missing: Record<string, RangeSet>): Promise<{ units: number; bytes: number }> {
  let units = 0;
  let bytes = 0;
  const s = inp.controller.follower.state;
  const now = inp.clock.now();
  const stale = inp.controller.config.topology.staleAfterMs;
  for (const [lane, ranges] of Object.entries(missing)) {
    if (ranges.isEmpty) continue;
    const by = new Map<string, RangeSet>();
    for (const h of inp.controller.ledger.holdings({ volume: inp.volume, lane })) {
      if (inp.failed.includes(h.holderId) || h.holderId === inp.replacement.holderId) continue;
      if (s.holders[h.holderId]?.status !== HolderStatus.active || s.holders[h.holderId]?.incarnation !== h.incarnation || now - h.issuedAt > stale) continue;
      by.set(h.holderId, (by.get(h.holderId) ?? RangeSet.EMPTY).union(h.retained.intersect(ranges)));
    }
    const sources = [...by].map(([holderId, retained]) => ({ holderId, retained })).sort((a, b) => b.retained.count - a.retained.count || (a.holderId < b.holderId ? -1 : 1));
    const out = await copyOverNats(inp.transport, { copier: inp.repairId, volume: inp.volume, lane, target: inp.replacement.holderId, missing: ranges, sources });
    if (!out.unavailable.isEmpty) throw new RepairSourceLostError({ lane, missing: out.unavailable.toJSON(), sourceErrors: out.sourceErrors });
    units += out.units;
    bytes += out.bytes;
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
