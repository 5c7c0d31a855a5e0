import type { EvaluationState } from "./evaluation-state.ts";
import { siteUsable, type SurvivorView } from "./survivor-view.ts";

/** True when a link still carries traffic: both ends usable and none of its dependencies lost. */
function linkAlive(view: SurvivorView, link: EvaluationState["links"][number]): boolean {
  if (!siteUsable(view, link.from) || !siteUsable(view, link.to)) return false;
  if (view.tokenLoss.has(`link:${link.id}`)) return false;
  return !link.deps.some((d) => view.tokenLoss.has(d));
}

/**
 * Widest-path bandwidth (bytes/s) from every usable site to `destination` over surviving links,
 * relaying through usable sites (`bandwidthOf` a link: its configured bandwidth unless given). The destination maps to
 * Infinity (no transfer needed); sites
 * with no path are absent. Deterministic (sites are visited in id order on ties).
 */
export function widestPathsTo(
  state: EvaluationState,
  view: SurvivorView,
  destination: string,
  bandwidthOf: (link: EvaluationState["links"][number]) => number = (l) => l.bandwidthBytesPerSec,
): Map<string, number> {
  const best = new Map<string, number>();
  if (!siteUsable(view, destination)) return best;
  const adj = new Map<string, { to: string; bw: number }[]>();
  for (const l of state.links) {
    if (!linkAlive(view, l)) continue;
    for (const [a, b] of [
      [l.from, l.to],
      [l.to, l.from],
    ] as const) {
      const list = adj.get(a) ?? [];
      list.push({ to: b, bw: bandwidthOf(l) });
      adj.set(a, list);
    }
  }
  best.set(destination, Infinity);
  const done = new Set<string>();
  for (;;) {
    let pick: string | undefined;
    for (const [s, bw] of best) {
      if (done.has(s)) continue;
      if (pick === undefined || bw > best.get(pick)! || (bw === best.get(pick)! && s < pick)) pick = s;
    }
    if (pick === undefined) return best;
    done.add(pick);
    for (const e of adj.get(pick) ?? []) {
      const via = Math.min(best.get(pick)!, e.bw);
      if (via > (best.get(e.to) ?? 0)) best.set(e.to, via);
    }
  }
}
