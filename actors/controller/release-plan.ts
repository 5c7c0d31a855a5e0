import { HolderStatus, type ControlState } from "../../custody/index.ts";
import { Residency, type authorizeReleases, type EvaluationState, type ReleaseRequest } from "../../policies/index.ts";
import { releasableHolders, type ControllerConfig } from "./controller-config.ts";
import { count, type ControllerEffect } from "./controller-effects.ts";
import { releaseCandidates, type holdsAsPolicy } from "./evaluation-input.ts";

/** What the release decisions remember between rounds (plain data, in the machine's context). */
export interface ReleaseMemory {
  /** When each holder's last release was committed (ms), for `releaseEveryMs`. */
  readonly lastReleaseAt: Readonly<Record<string, number>>;
  /** Holders configured or seen persisting (a disk claim): released only onto disk or a base. */
  readonly durable: readonly string[];
}

export const initialReleaseMemory = (config: Pick<ControllerConfig, "topology">): ReleaseMemory => ({
  lastReleaseAt: {},
  durable: [...(config.topology.durable ?? [])],
});

/** One round's decision: the durable holders now known, the requests granted (in order), the denials counted. */
export interface ReleasePlan {
  readonly durable: readonly string[];
  readonly granted: readonly ReleaseRequest[];
  readonly effects: readonly ControllerEffect[];
}

/**
 * Which releases this round commits (pure): the holders due (active, last release at least
 * `releaseEveryMs` ago), their candidates (durable holders only onto disk or a base; never what a
 * hold pins or a recovery reads), decided jointly by `authorize` (the policy's `authorizeReleases`);
 * each denial is counted, and by each of its reasons.
 */
export function planReleases(
  memory: ReleaseMemory,
  config: Pick<ControllerConfig, "topology" | "repair" | "releaseEveryMs">,
  s: ControlState,
  state: EvaluationState,
  held: ReturnType<typeof holdsAsPolicy>,
  nowMs: number,
  authorize: typeof authorizeReleases,
): ReleasePlan {
  const durable = [...memory.durable];
  for (const h of state.holders)
    if (h.claims.some((c) => c.residency === Residency.disk) && !durable.includes(h.id)) durable.push(h.id);
  const every = config.releaseEveryMs ?? 1_000;
  const due = (h: string) =>
    s.holders[h]?.status === HolderStatus.active && nowMs - (memory.lastReleaseAt[h] ?? -Infinity) >= every;
  const requests: ReleaseRequest[] = releaseCandidates(
    state,
    releasableHolders(config).filter(due),
    new Set(durable),
    held,
  );
  const decisions = requests.length > 0 ? authorize(state, requests) : [];
  const effects: ControllerEffect[] = [];
  for (const d of decisions) {
    if (d.allowed) continue;
    effects.push(count("release_denied"));
    for (const r of new Set(d.reasons)) effects.push(count(`release_denied.${r}`));
  }
  return { durable, granted: decisions.filter((d) => d.allowed).map((d) => d.request), effects };
}
