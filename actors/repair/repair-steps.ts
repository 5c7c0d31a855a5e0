import type { Clock } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { Transport } from "../../transport/index.ts";
import { copyOverNats } from "./copy-over-nats.ts";
import { HolderStatus } from "../../custody/index.ts";
import type { RepairPort, RepairView, ReplacementAdmission } from "./repair-port.ts";

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
  readonly replacement: ReplacementAdmission;
  /** How the repair reaches its controller (reads and commits go through it, never around it). */
  readonly port: RepairPort;
  /** Where it reads survivors' units and offers them to the replacement. */
  readonly transport: Transport;
  readonly clock: Clock;
  /** Bandwidth assumed for the estimate (bytes/s). */
  readonly repairBandwidthBytesPerSec: number;
  readonly receiptTimeoutMs?: number;
}

/** The parts of a repair's input `missingCoverage` reads. */
export type CoverageQuestion = Pick<RepairInput, "lanes" | "failed">;

/**
 * Lane → ranges the failed holders were still covering: what their last receipts retained, minus
 * what the control log had already released for them (that coverage was judged redundant). Pure.
 */
export function missingCoverage(view: RepairView, inp: CoverageQuestion): Record<string, RangeSet> {
  const out: Record<string, RangeSet> = {};
  for (const lane of inp.lanes) {
    const released = view.lanes[lane]?.released ?? {};
    let r = RangeSet.EMPTY;
    for (const h of view.holdings) {
      if (h.lane !== lane || !inp.failed.includes(h.holderId)) continue;
      r = r.union(h.retained.subtract(released[h.holderId] ?? RangeSet.EMPTY));
    }
    out[lane] = r;
  }
  return out;
}

/** What the survey step found: the missing coverage (now protected from release) and the view it came from. */
export interface RepairSurvey {
  readonly missing: Record<string, RangeSet>;
  readonly view: RepairView;
}

/**
 * Asks the controller for its view, computes the missing coverage and protects it from release
 * while the repair reads it (one protection per lane, `<repairId>-<lane>`).
 */
export async function surveyMissing(inp: RepairInput): Promise<RepairSurvey> {
  const view = await inp.port.view(inp.lanes);
  const missing = missingCoverage(view, inp);
  for (const [lane, ranges] of Object.entries(missing)) {
    if (!ranges.isEmpty) await inp.port.protect({ id: `${inp.repairId}-${lane}`, lane, ranges });
  }
  return { missing, view };
}

/** Commits `admit_holder` for the replacement (acquiring capacity through the control log). */
export function admitReplacement(inp: RepairInput): Promise<number> {
  return inp.port.admit(inp.replacement);
}

/**
 * Copies the missing ranges to the replacement over NATS: units are read from the holders the
 * ledger shows retaining them (fresh receipts of active, admitted incarnations; the failed ones
 * and the replacement excluded) and offered to the replacement, which admits and receipts them
 * itself. Returns the units and bytes copied. Throws RepairSourceLostError when no survivor could
 * serve part of a missing range.
 */
export async function copyMissing(
  inp: RepairInput,
  missing: Record<string, RangeSet>,
): Promise<{ units: number; bytes: number }> {
  let units = 0;
  let bytes = 0;
  const view = await inp.port.view(inp.lanes);
  const now = inp.clock.now();
  for (const [lane, ranges] of Object.entries(missing)) {
    if (ranges.isEmpty) continue;
    const by = new Map<string, RangeSet>();
    for (const h of view.holdings) {
      if (h.lane !== lane || inp.failed.includes(h.holderId) || h.holderId === inp.replacement.holderId) continue;
      const admitted = view.holders[h.holderId];
      if (
        admitted?.status !== HolderStatus.active ||
        admitted.incarnation !== h.incarnation ||
        now - h.issuedAt > view.staleAfterMs
      )
        continue;
      by.set(h.holderId, (by.get(h.holderId) ?? RangeSet.EMPTY).union(h.retained.intersect(ranges)));
    }
    const sources = [...by]
      .map(([holderId, retained]) => ({ holderId, retained }))
      .sort((a, b) => b.retained.count - a.retained.count || (a.holderId < b.holderId ? -1 : 1));
    const out = await copyOverNats(inp.transport, {
      copier: inp.repairId,
      volume: inp.volume,
      lane,
      target: inp.replacement.holderId,
      missing: ranges,
      sources,
      clock: inp.clock,
    });
    if (!out.unavailable.isEmpty)
      throw new RepairSourceLostError({ lane, missing: out.unavailable.toJSON(), sourceErrors: out.sourceErrors });
    units += out.units;
    bytes += out.bytes;
  }
  return { units, bytes };
}

/** Resolves once the controller's ledger shows the replacement retaining every missing range. */
export function awaitReplacementReceipts(inp: RepairInput, missing: Record<string, RangeSet>): Promise<void> {
  const until = inp.clock.now() + (inp.receiptTimeoutMs ?? 10_000);
  const lanes = Object.keys(missing);
  return new Promise((resolve, reject) => {
    const check = () => {
      inp.port.view(lanes).then((view) => {
        const ok = Object.entries(missing).every(([lane, ranges]) => {
          let r = RangeSet.EMPTY;
          for (const h of view.holdings)
            if (h.lane === lane && h.holderId === inp.replacement.holderId) r = r.union(h.retained);
          return r.coversAll(ranges);
        });
        if (ok) return resolve();
        if (inp.clock.now() > until) return reject(new RepairTimeoutError({ replacement: inp.replacement.holderId }));
        inp.clock.setTimeout(check, inp.port.pollMs);
      }, reject);
    };
    check();
  });
}

/**
 * Makes the replacement responsible for what the failed holders were responsible for (one transfer
 * per failed holder and lane, committed by the controller), so the controller may re-authorize
 * releases that relied on the lost copies. Returns the last committed sequence.
 */
export async function activateReplacement(inp: RepairInput, missing: Record<string, RangeSet>): Promise<number> {
  let last = 0;
  for (const lane of inp.lanes) {
    const ranges = missing[lane] ?? RangeSet.EMPTY;
    if (ranges.isEmpty) continue;
    for (const from of inp.failed) {
      const seq = await inp.port.activate({
        transferId: `${inp.repairId}-${lane}-${from}`,
        lane,
        fromHolder: from,
        toHolder: inp.replacement.holderId,
        ranges,
      });
      if (seq > 0) last = seq;
    }
  }
  return last;
}
