import { RangeSet } from "../lanes/index.ts";
import { LossKind, siteDomains, worseLoss, type Loss, type Scenario, type Site } from "../policies/index.ts";

/** Invariants the simulator checks; each violation names one. */
export const InvariantId = {
  /** A write confirmed as protected for a scenario is gone when that scenario happens. */
  lostConfirmedWrite: "lost_confirmed_write",
  /** A release left a required scenario below the cut the controller had confirmed. */
  releaseUncovered: "release_uncovered",
  /** A receipt claimed ranges its holder did not hold when it was sent. */
  receiptOverclaim: "receipt_overclaim",
  /** A released range is held again (by its holder) or claimed again (in the ledger). */
  releasedReappeared: "released_reappeared",
  /** A sender forwarded more units to a receiver than the receiver granted credits for. */
  creditExceeded: "credit_exceeded",
  /** Two controllers had commits accepted in one lease term of the volume (see sim/lease-audit.ts). */
  twoCommittersInTerm: "two_committers_in_term",
  /** The fold accepted a release committed by a controller that was not the volume's lease holder. */
  deposedRelease: "deposed_release",
  /** A holder released a range a standing hold (PITR pin, recovery) binds it to keep. */
  heldRangeReleased: "held_range_released",
  /** A holder released a range the control log has not released at it. */
  releaseBeyondLog: "release_beyond_log",
} as const;
export type InvariantId = (typeof InvariantId)[keyof typeof InvariantId];

/** One broken invariant, with what is needed to understand it. */
export interface Violation {
  readonly invariant: InvariantId;
  readonly atMs: number;
  readonly message: string;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** Ground truth of one holder at an instant. */
export interface HolderTruth {
  readonly id: string;
  readonly site: string;
  readonly ram: RangeSet;
  readonly disk: RangeSet;
  /** RAM survives a crash or power loss (protected RAM with valid hold-up evidence). */
  readonly ramSurvivesPower: boolean;
  readonly released: RangeSet;
  /** What the controller's ledger claims for this holder, and what it granted for release. */
  readonly ledger: RangeSet;
  readonly granted: RangeSet;
  /** What the control log has committed as released at this holder (its release frontier in the log). */
  readonly committed: RangeSet;
}

/** A hold standing in the control log, with what the log had released at each holder before it was placed. */
export interface HoldTruth {
  readonly holdId: string;
  readonly ranges: RangeSet;
  /** Holders it binds; empty: every holder. */
  readonly holders: readonly string[];
  readonly releasedBefore: Readonly<Record<string, RangeSet>>;
}

/** A credit edge as seen by both ends: units sent in the receiver's incarnation vs the most it granted. */
export interface CreditTruth {
  readonly sender: string;
  readonly receiver: string;
  readonly inc: number;
  readonly sent: number;
  readonly maxGranted: number;
}

/** A receipt as sent, with the sender's holdings at that instant. */
export interface ReceiptTruth {
  readonly holder: string;
  readonly claimed: RangeSet;
  readonly held: RangeSet;
}

/** What the checks look at after a step. Plain data; the checks below are pure functions of it. */
export interface WorldObservation {
  readonly atMs: number;
  readonly holders: readonly HolderTruth[];
  readonly credits: readonly CreditTruth[];
  readonly receipts: readonly ReceiptTruth[];
  /** Holds standing in the control log now. */
  readonly holds: readonly HoldTruth[];
}

/**
 * The ground-truth recoverable cut if `losses` happened now: the contiguous prefix (from 0) of
 * every range that physically survives. Disk survives anything short of destruction; RAM survives
 * only when it is protected with valid evidence and the loss is not destruction.
 *
 * Re-derives the surviving cut on purpose rather than reusing the policy engine's
 * (policies/survival-report.ts `chooseCut`): it is the oracle that engine is checked against, so it
 * reads physical ground truth and shares none of the engine's code.
 */
export function survivingCut(
  holders: readonly HolderTruth[],
  sites: readonly Site[],
  losses: readonly Loss[],
  drop: (h: HolderTruth) => RangeSet = () => RangeSet.EMPTY,
): number {
  const siteById = new Map(sites.map((s) => [s.id, s]));
  let live = RangeSet.EMPTY;
  for (const h of holders) {
    const site = siteById.get(h.site);
    let kind: LossKind | undefined;
    if (site) {
      const domains = siteDomains(site);
      for (const l of losses) if (domains.has(l.domain)) kind = worseLoss(kind, l.kind);
    }
    let keep: RangeSet;
    if (kind === undefined || kind === LossKind.partition) keep = h.ram.union(h.disk);
    else if (kind === LossKind.siteDestruction) keep = RangeSet.EMPTY;
    else keep = h.ramSurvivesPower ? h.ram.union(h.disk) : h.disk;
    live = live.union(keep.subtract(drop(h)));
  }
  return live.contiguousThrough(0);
}

/** A receipt never claims what its holder did not hold when sending it. */
export function checkReceipts(obs: WorldObservation): Violation[] {
  return obs.receipts
    .filter((r) => !r.held.coversAll(r.claimed))
    .map((r) => ({
      invariant: InvariantId.receiptOverclaim,
      atMs: obs.atMs,
      message: `${r.holder} claimed ${r.claimed.subtract(r.held).toString()} it does not hold`,
      detail: { holder: r.holder, extra: r.claimed.subtract(r.held).toJSON() },
    }));
}

/** Released ranges are never held again by their holder, nor claimed again in the ledger. */
export function checkReleased(obs: WorldObservation): Violation[] {
  const out: Violation[] = [];
  for (const h of obs.holders) {
    // Checked per part: the union of RAM and disk is only built to name a violation.
    if (h.ram.intersects(h.released) || h.disk.intersects(h.released)) {
      const held = h.ram.union(h.disk);
      out.push({
        invariant: InvariantId.releasedReappeared,
        atMs: obs.atMs,
        message: `${h.id} holds released ${held.intersect(h.released).toString()}`,
        detail: { holder: h.id },
      });
    }
    if (h.ledger.intersects(h.granted)) {
      out.push({
        invariant: InvariantId.releasedReappeared,
        atMs: obs.atMs,
        message: `ledger claims released ${h.ledger.intersect(h.granted).toString()} on ${h.id}`,
        detail: { holder: h.id },
      });
    }
  }
  return out;
}

/** No sender has forwarded more distinct units than its receiver granted (per receiver incarnation). */
export function checkCredits(obs: WorldObservation): Violation[] {
  return obs.credits
    .filter((c) => c.sent > c.maxGranted)
    .map((c) => ({
      invariant: InvariantId.creditExceeded,
      atMs: obs.atMs,
      message: `${c.sender} sent ${c.sent} units to ${c.receiver} (inc ${c.inc}) with ${c.maxGranted} granted`,
      detail: { ...c },
    }));
}

/**
 * No holder has released a range a standing hold binds it to keep, beyond what the log had
 * already released at it when the hold was placed (a hold cannot take back an earlier release).
 */
export function checkHolds(obs: WorldObservation): Violation[] {
  const out: Violation[] = [];
  for (const hold of obs.holds) {
    for (const h of obs.holders) {
      if (hold.holders.length > 0 && !hold.holders.includes(h.id)) continue;
      if (!h.released.intersects(hold.ranges)) continue;
      const bad = h.released.intersect(hold.ranges).subtract(hold.releasedBefore[h.id] ?? RangeSet.EMPTY);
      if (bad.isEmpty) continue;
      out.push({
        invariant: InvariantId.heldRangeReleased,
        atMs: obs.atMs,
        message: `${h.id} released ${bad.toString()} while hold ${hold.holdId} stands`,
        detail: { holder: h.id, holdId: hold.holdId, ranges: bad.toJSON() },
      });
    }
  }
  return out;
}

/** Every range a holder released, the control log had committed as released at that holder. */
export function checkReleasesCommitted(obs: WorldObservation): Violation[] {
  return obs.holders
    .filter((h) => !h.committed.coversAll(h.released))
    .map((h) => ({
      invariant: InvariantId.releaseBeyondLog,
      atMs: obs.atMs,
      message: `${h.id} released ${h.released.subtract(h.committed).toString()} the control log never released at it`,
      detail: { holder: h.id, ranges: h.released.subtract(h.committed).toJSON() },
    }));
}

/**
 * When `scenario` happens, every write confirmed for it must survive: the ground-truth cut after
 * its losses is at least `confirmed` (undefined = nothing confirmed within the contract).
 */
export function checkStrike(
  obs: WorldObservation,
  sites: readonly Site[],
  scenario: Scenario,
  confirmed: number | undefined,
): Violation[] {
  if (confirmed === undefined) return [];
  const cut = survivingCut(obs.holders, sites, scenario.losses);
  if (cut >= confirmed) return [];
  return [
    {
      invariant: InvariantId.lostConfirmedWrite,
      atMs: obs.atMs,
      message: `${scenario.name}: writes through ${confirmed} were confirmed, only ${cut} survive`,
      detail: { scenario: scenario.name, confirmed, surviving: cut },
    },
  ];
}

/**
 * After releases are granted, every required scenario keeps the cut confirmed for it: the ground
 * truth minus everything granted for release (applied or still in flight) still reaches it.
 */
export function checkReleaseCoverage(
  obs: WorldObservation,
  sites: readonly Site[],
  scenarios: readonly Scenario[],
  confirmed: ReadonlyMap<string, number>,
): Violation[] {
  const out: Violation[] = [];
  for (const s of scenarios) {
    const want = confirmed.get(s.name);
    if (want === undefined || !s.required) continue;
    const cut = survivingCut(obs.holders, sites, s.losses, (h) => h.granted);
    if (cut < want) {
      out.push({
        invariant: InvariantId.releaseUncovered,
        atMs: obs.atMs,
        message: `releases leave ${s.name} at ${cut}, below its confirmed ${want}`,
        detail: { scenario: s.name, confirmed: want, surviving: cut },
      });
    }
  }
  return out;
}
