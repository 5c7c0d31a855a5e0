import { createActor, toPromise } from "xstate";
import { CustodyError } from "../core/index.ts";
import type { ControlEventOf } from "../custody/index.ts";
import { repairMachine, RepairState, type RepairReport } from "./repair.machine.ts";
import type { RepairInput } from "./repair/repair-steps.ts";

/** Thrown when a repair task ends in `failed`; `detail.step` names where, `detail.cause` the code. */
export class RepairFailedError extends CustodyError {
  constructor(step: string, cause: { code: string; message: string }) {
    super("repair_failed", `repair failed while ${step}: ${cause.message}`, { step, cause: cause.code });
  }
}

/**
 * Runs one repair task to completion and resolves with its report (measured time next to the
 * estimate). Throws RepairFailedError when any step fails (nothing is activated then).
 */
export async function runRepair(input: RepairInput): Promise<RepairReport> {
  const actor = createActor(repairMachine, { input, clock: input.clock });
  let lastStep: string = RepairState.Admitting;
  actor.subscribe((s) => {
    if (s.value !== RepairState.Failed) lastStep = String(s.value);
  });
  actor.start();
  await toPromise(actor).catch(() => undefined);
  const snap = actor.getSnapshot();
  if (snap.value === RepairState.Done && snap.context.report) return snap.context.report;
  throw new RepairFailedError(lastStep, snap.context.error ?? { code: "repair_failed", message: "unknown" });
}

/**
 * Starts a repair for a committed declare-failure event: the failed holders it names (and those of
 * its domain, given by the caller from the folded state) lose their coverage, which is restored.
 */
export function repairForFailure(event: ControlEventOf<"declare_failure">, failedInDomain: readonly string[], rest: Omit<RepairInput, "failed">): Promise<RepairReport> {
  const failed = [...new Set([...event.holderIds, ...failedInDomain])];
  return runRepair({ ...rest, failed });
}
