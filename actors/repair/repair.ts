import { createActor, toPromise } from "xstate";
import { CustodyError } from "../../core/index.ts";
import type { ControlEventOf } from "../../custody/index.ts";
import type { RepairFailure, RepairOutcome, RepairReport } from "./repair.machine.ts";
import { repairMachineFor } from "./repair-executors.ts";
import { repairSettingsOf } from "./repair-state.ts";
import type { RepairInput } from "./repair-steps.ts";

/** Thrown when a repair task ends in `failed`; `detail.step` names where, `detail.cause` the code. */
export class RepairFailedError extends CustodyError {
  constructor(step: string, cause: { code: string; message: string }) {
    super("repair_failed", `repair failed while ${step}: ${cause.message}`, { step, cause: cause.code });
  }
}

/** The report of a repair outcome, or RepairFailedError naming the step that failed. */
export function reportOf(outcome: RepairOutcome): RepairReport {
  if (outcome.report !== undefined) return outcome.report;
  const f: RepairFailure = outcome.failure ?? { step: "unknown", code: "repair_failed", message: "unknown" };
  throw new RepairFailedError(f.step, f);
}

/**
 * Runs one repair task to completion as a root actor (a repair worker's task, or a test) and
 * resolves with its report (measured time next to the estimate). Throws RepairFailedError when any
 * step fails (nothing is activated then). The controller runs its own repairs as child actors.
 */
export async function runRepair(input: RepairInput): Promise<RepairReport> {
  return reportOf(await runRepairTask(input));
}

/**
 * Runs one repair task to completion and resolves with its outcome (never rejects). The machine is
 * started with the plain settings; the ports reach only its invoked children (repairMachineFor).
 */
export async function runRepairTask(input: RepairInput): Promise<RepairOutcome> {
  const actor = createActor(repairMachineFor({ port: input.port, transport: input.transport, clock: input.clock }), {
    input: repairSettingsOf(input),
    clock: input.clock,
  });
  actor.start();
  return toPromise(actor);
}

/**
 * Starts a repair for a committed declare-failure event: the failed holders it names (and those of
 * its domain, given by the caller from the folded state) lose their coverage, which is restored.
 */
export function repairForFailure(
  event: ControlEventOf<"declare_failure">,
  failedInDomain: readonly string[],
  rest: Omit<RepairInput, "failed">,
): Promise<RepairReport> {
  const failed = [...new Set([...event.holderIds, ...failedInDomain])];
  return runRepair({ ...rest, failed });
}
