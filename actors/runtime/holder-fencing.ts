import type { HandoverReport, Holder } from "../index.ts";
import { CustodyError } from "../../core/index.ts";

/**
 * A holder process learns from the control log that a newer incarnation of its identity was
 * admitted (started elsewhere, or by a supervisor): the holder actor has already stopped serving
 * (state `fenced`, actors/holder/holder.machine.ts); the process says so in one line and exits with
 * EXIT_FENCED (cli/commands/run.ts), so it neither lingers looking healthy nor fights the newer one.
 */

/** Why a fenced holder process ends (printed as its one error line). */
export class HolderFencedError extends CustodyError {
  constructor(
    readonly holderId: string,
    readonly incarnation: number,
    readonly by: number,
    handover: HandoverReport | undefined,
  ) {
    const handed =
      handover === undefined
        ? "its handover failed"
        : `handed ${handover.offeredUnits} units to ` +
          `it${handover.unconfirmedSeqs > 0 ? ` (${handover.unconfirmedSeqs} sequences NOT confirmed by it)` : ""}`;
    super(
      "holder_fenced",
      `holder ${holderId} incarnation ${incarnation} is fenced by incarnation ${by} (admitted in the control log); ` +
        `it stopped serving, ${handed}, and exits`,
      { holderId, incarnation, by, ...(handover ?? {}) },
    );
  }
}

/** Resolves once `holder` is fenced and has handed over what it retained (never, if it stops otherwise). */
export function whenFenced(holder: Holder): Promise<HolderFencedError> {
  return new Promise((resolve) => {
    const check = (): boolean => {
      const by = holder.fencedBy();
      if (by === undefined || holder.actor.getSnapshot().status !== "done") return false;
      resolve(new HolderFencedError(holder.id, holder.incarnation, by, holder.handover()));
      return true;
    };
    if (check()) return;
    const sub = holder.actor.subscribe({
      next: () => check() && sub.unsubscribe(),
      error: () => sub.unsubscribe(),
      complete: () => (check(), sub.unsubscribe()),
    });
  });
}
