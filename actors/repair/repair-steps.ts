import { RepairSourceLostError } from "./repair-errors.ts";
import { copyOverNats } from "./copy-over-nats.ts";
import {
  activationTransfers,
  copySources,
  laneRangesOf,
  missingCoverage,
  protectionId,
  rangesOf,
  replacementCovers,
} from "./repair-plan.ts";
import type { RepairPorts } from "./repair-port.ts";
import type { RecoveryParams } from "../../policies/index.ts";
import { replacementFromData, type LaneRanges, type RepairSettings, type RepairTask } from "./repair-state.ts";

/**
 * The repair's steps that touch the world: each is one invoked child of the repair machine, given
 * plain data by the machine and the ports by `repairMachineFor`. The decisions they act on are
 * the pure functions of repair-plan.ts; the times they read come back in their outputs.
 */

export { RepairSourceLostError, RepairTimeoutError } from "./repair-errors.ts";

/** Everything a repair task is started with: its settings and the ports it works through. */
export type RepairInput = RepairSettings & RepairPorts;

/** What the survey found: when it began, the missing coverage (now protected from release), the recovery times. */
export interface RepairSurvey {
  readonly startedAt: number;
  readonly missing: LaneRanges;
  readonly recovery: RecoveryParams;
}

/**
 * Asks the controller for its view, computes the missing coverage and protects it from release
 * while the repair reads it (one protection per lane, `<repairId>-<lane>`).
 */
export async function surveyMissing(ports: RepairPorts, task: RepairTask): Promise<RepairSurvey> {
  const startedAt = ports.clock.now();
  const view = await ports.port.view(task.lanes);
  const missing = missingCoverage(view, task);
  for (const [lane, ranges] of Object.entries(missing)) {
    if (!ranges.isEmpty) await ports.port.protect({ id: protectionId(task.repairId, lane), lane, ranges });
  }
  return { startedAt, missing: laneRangesOf(missing), recovery: view.recovery };
}

/** Commits `admit_holder` for the replacement (acquiring capacity through the control log). */
export function admitReplacement(ports: RepairPorts, task: RepairTask): Promise<number> {
  return ports.port.admit(replacementFromData(task.replacement));
}

/** Units and bytes a copy moved, and when it ended. */
export interface RepairCopy {
  readonly units: number;
  readonly bytes: number;
  readonly at: number;
}

/**
 * Copies the missing ranges to the replacement over NATS: units are read from the holders the
 * ledger shows retaining them (`copySources`) and offered to the replacement, which admits and
 * receipts them itself. Throws RepairSourceLostError when no survivor could serve part of a range.
 */
export async function copyMissing(ports: RepairPorts, task: RepairTask, missing: LaneRanges): Promise<RepairCopy> {
  let units = 0;
  let bytes = 0;
  const view = await ports.port.view(task.lanes);
  const now = ports.clock.now();
  const who = { failed: task.failed, replacement: task.replacement.holderId };
  for (const lane of Object.keys(missing)) {
    const ranges = rangesOf(missing, lane);
    if (ranges.isEmpty) continue;
    const out = await copyOverNats(ports.transport, {
      copier: task.repairId,
      volume: task.volume,
      lane,
      target: task.replacement.holderId,
      missing: ranges,
      sources: copySources(view, lane, ranges, who, now),
      clock: ports.clock,
    });
    if (!out.unavailable.isEmpty)
      throw new RepairSourceLostError({ lane, missing: out.unavailable.toJSON(), sourceErrors: out.sourceErrors });
    units += out.units;
    bytes += out.bytes;
  }
  return { units, bytes, at: ports.clock.now() };
}

/** One look at the replacement's receipts: whether they cover every missing range, and when it looked. */
export interface ReceiptCheck {
  readonly covered: boolean;
  readonly at: number;
}

/** Asks the controller's ledger whether the replacement retains every missing range. */
export async function checkReceipts(ports: RepairPorts, task: RepairTask, missing: LaneRanges): Promise<ReceiptCheck> {
  const view = await ports.port.view(Object.keys(missing));
  return { covered: replacementCovers(view, missing, task.replacement.holderId), at: ports.clock.now() };
}

/** The last committed activation sequence (0 when none was needed), and when activation ended. */
export interface RepairActivation {
  readonly controlSeq: number;
  readonly at: number;
}

/**
 * Makes the replacement responsible for what the failed holders were responsible for (one transfer
 * per failed holder and lane, committed by the controller), so the controller may re-authorize
 * releases that relied on the lost copies.
 */
export async function activateReplacement(
  ports: RepairPorts,
  task: RepairTask,
  missing: LaneRanges,
): Promise<RepairActivation> {
  let last = 0;
  for (const t of activationTransfers(task, task.replacement.holderId, missing)) {
    const seq = await ports.port.activate(t);
    if (seq > 0) last = seq;
  }
  return { controlSeq: last, at: ports.clock.now() };
}

/**
 * Ends the repair's protections. Fire and forget: a protection left behind (its controller
 * unreachable) is ended by the controller when the repair's outcome reaches it.
 */
export function endProtections(ports: RepairPorts, ids: readonly string[]): void {
  for (const id of ids) void ports.port.unprotect(id).catch(() => undefined);
}
