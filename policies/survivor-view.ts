import { RangeSet } from "../lanes/index.ts";
import type { EvaluationState, Holder, RetainedClaim, EvidenceLabel } from "./evaluation-state.ts";
import { LossKind, worseLoss, type Loss } from "./scenario.ts";
import { siteDomains } from "./topology.ts";
import { UnknownReferenceError } from "./policy-errors.ts";

/** A claim whose bytes still exist, tagged with its holder and site. */
export interface LiveClaim {
  readonly holder: string;
  readonly site: string;
  readonly claim: RetainedClaim;
}

/**
 * What is left after some losses: the live claims, the worst loss suffered by each site so far,
 * and every lost domain token (for links and key authorities). Immutable; `applyLosses` returns a new view.
 */
export interface SurvivorView {
  readonly claims: readonly LiveClaim[];
  readonly siteLoss: ReadonlyMap<string, LossKind>;
  readonly tokenLoss: ReadonlyMap<string, LossKind>;
  /** Holders whose protected-RAM claims were dropped because their evidence was not valid. */
  readonly unprovenProtected: readonly string[];
}

/** The evidence label of a claim at `asOfMs`: observed receipts go stale after `staleAfterMs`. */
export function evidenceLabel(claim: RetainedClaim, asOfMs: number, staleAfterMs: number): EvidenceLabel {
  if (claim.evidence.kind === "admitted_bound") return "admitted_bound";
  return asOfMs - claim.evidence.atMs > staleAfterMs ? "stale" : "observed";
}

/** The view before any loss: every claim of every holder is live. */
export function initialView(state: EvaluationState): SurvivorView {
  const claims: LiveClaim[] = [];
  state.holders.forEach((h: Holder, i) => {
    if (!state.sites.some((s) => s.id === h.site)) throw new UnknownReferenceError(`holders[${i}].site`, h.site);
    for (const c of h.claims) claims.push({ holder: h.id, site: h.site, claim: c });
  });
  return { claims, siteLoss: new Map(), tokenLoss: new Map(), unprovenProtected: [] };
}

/** True when the claim's bytes survive a loss of `kind` at its site (see LossKind). */
function claimSurvives(claim: RetainedClaim, kind: LossKind | undefined, label: EvidenceLabel): boolean {
  if (kind === undefined || kind === LossKind.partition) return true;
  if (kind === LossKind.siteDestruction) return false;
  if (claim.residency === "disk") return true;
  // Protected RAM counts only with valid, current hold-up evidence; a label alone preserves nothing.
  if (claim.residency === "protected_ram") return claim.protectedRamValid === true && label !== "stale";
  return false;
}

/**
 * Applies simultaneous `losses` to `view`. Each site suffers the worst loss that reaches one of its
 * domains; the claims there are kept or dropped by residency. Pure: returns a new view.
 */
export function applyLosses(state: EvaluationState, view: SurvivorView, losses: readonly Loss[]): SurvivorView {
  const hit = new Map<string, LossKind>();
  for (const site of state.sites) {
    const domains = siteDomains(site);
    let kind: LossKind | undefined;
    for (const l of losses) if (domains.has(l.domain)) kind = worseLoss(kind, l.kind);
    if (kind !== undefined) hit.set(site.id, kind);
  }
  const siteLoss = new Map(view.siteLoss);
  for (const [s, k] of hit) siteLoss.set(s, worseLoss(siteLoss.get(s), k)!);
  const tokenLoss = new Map(view.tokenLoss);
  for (const l of losses) tokenLoss.set(l.domain, worseLoss(tokenLoss.get(l.domain), l.kind)!);
  const unproven = new Set(view.unprovenProtected);
  const claims = view.claims.filter((lc) => {
    const kind = hit.get(lc.site);
    const ok = claimSurvives(lc.claim, kind, evidenceLabel(lc.claim, state.asOfMs, state.staleAfterMs));
    if (!ok && lc.claim.residency === "protected_ram" && kind !== LossKind.siteDestruction) unproven.add(lc.holder);
    return ok;
  });
  return { claims, siteLoss, tokenLoss, unprovenProtected: [...unproven].sort() };
}

/** True when a site can still serve or relay data: not destroyed and not partitioned. */
export function siteUsable(view: SurvivorView, site: string): boolean {
  const k = view.siteLoss.get(site);
  return k !== LossKind.siteDestruction && k !== LossKind.partition;
}

/** True when the site's disk contents still exist (anything short of destruction). */
export function siteDiskSurvives(view: SurvivorView, site: string): boolean {
  return view.siteLoss.get(site) !== LossKind.siteDestruction;
}

/** Union of live ranges of `lane`, optionally restricted to claims accepted by `keep`. */
export function liveRanges(view: SurvivorView, lane: string, keep: (lc: LiveClaim) => boolean = () => true): RangeSet {
  let out = RangeSet.EMPTY;
  for (const lc of view.claims) if (lc.claim.lane === lane && keep(lc)) out = out.union(lc.claim.ranges);
  return out;
}
