import type { Holding } from "../../custody/index.ts";
import type { CommitRun } from "../../policies/index.ts";
import { checkAllProtectedRam, parseProtectedRamInput } from "../../policies/index.ts";
import { bytesOfRanges } from "./controller-spend.ts";
import type { ProtectedRamLayout } from "./protected-ram-layout.ts";

export type { ProtectedRamLayout };

/**
 * Holders whose protected-RAM claims the controller must not count as surviving power loss: with
 * every described holder's receipted protected bytes queued at once, the group check (shared drain
 * targets and links split between simultaneous drains) finds the bound broken for them. Holders
 * the layout does not describe are not judged here. Pure; throws PolicyInputError for a layout
 * that names a shared target or link without a capacity.
 */
export function protectedRamOverBound(
  layout: ProtectedRamLayout,
  holdings: readonly Holding[],
  commits: readonly CommitRun[],
): Set<string> {
  const ids = Object.keys(layout.nodes).sort();
  const queued = new Map<string, number>(ids.map((id) => [id, 0]));
  for (const h of holdings) {
    if (h.residency !== "protected_ram" || !queued.has(h.holderId)) continue;
    queued.set(h.holderId, queued.get(h.holderId)! + bytesOfRanges(commits, h.lane, h.retained));
  }
  const { nodes, capacities } = parseProtectedRamInput({
    nodes: ids.map((id) => ({ id, queuedProtectedBytes: queued.get(id)!, ...layout.nodes[id] })),
    capacities: { targets: layout.capacities?.targets ?? {}, links: layout.capacities?.links ?? {} },
  });
  return new Set(
    checkAllProtectedRam(nodes, capacities)
      .filter((v) => !v.admitted)
      .map((v) => v.node),
  );
}
