import { LossKind, worseLoss, type Loss } from "./scenario.ts";
import { siteDomains, type Site } from "./topology.ts";

/** What the persistence-target chooser is given: the lane's holders, who may persist, and the contract. */
export interface PersistenceTargetInput {
  readonly sites: readonly Site[];
  /** Every holder that receives the lane, with its site id. */
  readonly laneHolders: Readonly<Record<string, string>>;
  /** Holders that can persist the lane (disk-capable and active), a subset of `laneHolders`. */
  readonly candidates: readonly string[];
  /** The contract: each required scenario's losses, and each required timeline's losses taken together. */
  readonly scenarios: readonly { readonly name: string; readonly losses: readonly Loss[] }[];
  /** Persisted copies each scenario that needs one keeps (default 1). */
  readonly copies?: number;
  /** The targets chosen before, preferred on a tie so a choice does not flap. */
  readonly current?: readonly string[];
}

/** The chooser's answer. */
export interface PersistenceTargets {
  /** Sorted holder ids; empty when no scenario needs a persisted copy (then nothing is chosen). */
  readonly targets: readonly string[];
  /** Scenarios the targets keep a persisted copy for. */
  readonly covered: readonly string[];
  /** Scenarios that need a persisted copy no candidate can keep (its disk is destroyed or cut off too). */
  readonly uncovered: readonly string[];
}

/** The worst loss each site suffers under `losses` (absent: untouched). */
function siteLosses(sites: readonly Site[], losses: readonly Loss[]): Map<string, LossKind> {
  const out = new Map<string, LossKind>();
  for (const site of sites) {
    const domains = siteDomains(site);
    let kind: LossKind | undefined;
    for (const l of losses) if (domains.has(l.domain)) kind = worseLoss(kind, l.kind);
    if (kind !== undefined) out.set(site.id, kind);
  }
  return out;
}

/** A crash or a power loss takes RAM and keeps disk: only there does a persisted copy change the outcome. */
const keepsDisk = (k: LossKind | undefined): boolean => k === LossKind.crash || k === LossKind.powerLoss;

/**
 * Chooses the lane's persistence targets: enough disk-capable holders that every scenario in which
 * no holder's RAM copy survives (each holder's site crashed, lost power, was destroyed or cut off)
 * keeps `copies` persisted copies at holders whose disks it spares. Greedy cover: the candidate
 * that serves the most scenarios still short of copies first, then a current target, then by id.
 * Scenarios that some RAM copy survives need no disk and constrain nothing. Pure.
 */
export function choosePersistenceTargets(input: PersistenceTargetInput): PersistenceTargets {
  const copies = Math.max(1, input.copies ?? 1);
  const current = new Set(input.current ?? []);
  // Which candidates keep a persisted copy through each scenario that needs one.
  const needs = new Map<string, Set<string>>();
  for (const s of input.scenarios) {
    const hit = siteLosses(input.sites, s.losses);
    const ramSurvives = Object.values(input.laneHolders).some((site) => !hit.has(site));
    if (ramSurvives) continue;
    needs.set(s.name, new Set(input.candidates.filter((c) => keepsDisk(hit.get(input.laneHolders[c] ?? "")))));
  }
  const short = new Map<string, number>([...needs.keys()].map((n) => [n, copies]));
  const chosen: string[] = [];
  const pool = [...input.candidates].sort();
  for (;;) {
    let best: string | undefined;
    let bestScore = 0;
    for (const c of pool) {
      if (chosen.includes(c)) continue;
      let score = 0;
      for (const [n, left] of short) if (left > 0 && needs.get(n)!.has(c)) score++;
      const better =
        score > bestScore ||
        (score === bestScore && score > 0 && best !== undefined && current.has(c) && !current.has(best));
      if (better) [best, bestScore] = [c, score];
    }
    if (best === undefined) break;
    chosen.push(best);
    for (const [n, left] of short) if (needs.get(n)!.has(best)) short.set(n, left - 1);
  }
  const uncovered = [...short].filter(([, left]) => left > 0).map(([n]) => n);
  const covered = [...needs.keys()].filter((n) => !uncovered.includes(n));
  return { targets: chosen.sort(), covered, uncovered };
}
