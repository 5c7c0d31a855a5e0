import { HolderStatus, inFailureDomain, type ControlLogEntry, type ControlState } from "../../custody/index.ts";
import type { ControlEventOf } from "../../custody/index.ts";

/** A committed declare-failure event the controller still has to repair, keyed by its control-log sequence. */
export interface FailureToRepair {
  readonly seq: number;
  readonly event: ControlEventOf<"declare_failure">;
  /** Holders the event failed: those it names plus those of its domain (as the fold marked them). */
  readonly failed: readonly string[];
}

/** The repair id of the failure committed at `seq` (also the prefix of the repair's transfer ids). */
export function repairIdOf(volume: string, seq: number): string {
  return `repair-${volume}-${seq}`;
}

/**
 * The declare-failure events in `entries` (ascending) that still need a repair, given the folded
 * state `s` after them. Pure. An event is skipped when the fold rejected it, when a later
 * `activate_replacement` moved responsibility away from one of its failed holders (a repair of
 * it already completed, whoever ran it), or when none of its failed holders is still responsible
 * for anything of `obligations` (nothing to restore). Restart-safe: the answer depends only on the log.
 */
export function failuresToRepair(
  entries: readonly ControlLogEntry[],
  s: ControlState,
  obligations: readonly string[],
): FailureToRepair[] {
  const rejected = new Set(s.rejected.map((r) => r.seq));
  const open: FailureToRepair[] = [];
  for (const e of entries) {
    if (rejected.has(e.seq)) continue;
    const ev = e.event;
    if (ev.type === "declare_failure") {
      const failed = new Set(ev.holderIds);
      for (const h of Object.values(s.holders))
        if (h.status === HolderStatus.failed && inFailureDomain(h.failureDomain, ev.domain)) failed.add(h.holderId);
      open.push({ seq: e.seq, event: ev, failed: [...failed].sort() });
    } else if (ev.type === "activate_replacement") {
      const from = s.transfers[ev.transferId]?.fromHolder;
      if (from === undefined) continue;
      for (let i = open.length - 1; i >= 0; i--) if (open[i]!.failed.includes(from)) open.splice(i, 1);
    }
  }
  return open.filter((f) =>
    f.failed.some((h) => obligations.some((o) => !(s.obligations[o]?.responsible[h]?.isEmpty ?? true))),
  );
}
