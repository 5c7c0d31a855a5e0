import { RangeSet } from "../../lanes/index.ts";
import { siteDomains, type Site } from "../../policies/index.ts";
import type { ProtectionContract } from "./writer-config.ts";

/**
 * Pure protection arithmetic: which sequences of a lane are proven by receipts to satisfy a
 * contract. Only holders whose site survives every loss of the contract count, and a sequence
 * needs `copies` of them.
 */

/** Sequences held by at least `k` of the given sets (sweep over range boundaries). Pure. */
export function coveredByAtLeast(sets: readonly RangeSet[], k: number): RangeSet {
  if (k <= 1) return sets.reduce((a, s) => a.union(s), RangeSet.EMPTY);
  const edges: [number, number][] = [];
  for (const s of sets) for (const [a, b] of s.toJSON()) edges.push([a, 1], [b + 1, -1]);
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let depth = 0;
  let start = -1;
  let out = RangeSet.EMPTY;
  for (const [at, d] of edges) {
    const before = depth;
    depth += d;
    if (before < k && depth >= k) start = at;
    else if (before >= k && depth < k && at - 1 >= start) out = out.add(start, at - 1);
  }
  return out;
}

/** True when `site` survives every loss domain of `contract`. */
export function survivesContract(site: Site | undefined, contract: ProtectionContract): boolean {
  if (site === undefined) return false;
  const d = siteDomains(site);
  return contract.losses.every((l) => !d.has(l));
}

/** The sequences of one lane proven under `contract` by `proven` (holder → sequences it receipted). */
export function protectedSeqs(
  proven: ReadonlyMap<string, RangeSet>,
  sites: Readonly<Record<string, Site>>,
  contract: ProtectionContract,
): RangeSet {
  const eligible = [...proven.entries()].filter(([h]) => survivesContract(sites[h], contract)).map(([, r]) => r);
  return coveredByAtLeast(eligible, contract.copies ?? 1);
}
