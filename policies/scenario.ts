/**
 * How a loss treats what a holder keeps. Severity grows down the list; a site reached by several
 * losses suffers the worst one.
 * - `partition`: nothing is destroyed, but the site is unreachable (its data has no bounded recovery time).
 * - `crash`: process/host crash — RAM is lost, disk is kept, protected RAM is kept only with valid evidence.
 * - `power_loss`: RAM is lost unless protected-RAM evidence is valid; disk is kept.
 * - `site_destruction`: everything at the site is lost.
 */
export const LossKind = {
  partition: "partition",
  crash: "crash",
  powerLoss: "power_loss",
  siteDestruction: "site_destruction",
} as const;
export type LossKind = (typeof LossKind)[keyof typeof LossKind];

const SEVERITY: Record<LossKind, number> = { partition: 1, crash: 2, power_loss: 3, site_destruction: 4 };

/** The more severe of two loss kinds (undefined means "not reached"). */
export function worseLoss(a: LossKind | undefined, b: LossKind | undefined): LossKind | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return SEVERITY[a] >= SEVERITY[b] ? a : b;
}

/** One loss: every site (or link, key authority) reached by `domain` suffers `kind`. */
export interface Loss {
  /** A failure-domain token: `region:…`, `az:…`, `host:…`, `site:…` or a dependency tag. */
  readonly domain: string;
  readonly kind: LossKind;
}

/** A named set of simultaneous losses and the recovery deadline the contract promises for it. */
/**
 * The loss a scenario or timeline allows: acknowledged writes (`seqs`), their bytes, and the age
 * of the oldest lost one (`ageSec`). Each stated limit must hold; a scenario without `allowedLoss`
 * allows no acknowledged write lost.
 */
export interface AllowedLoss {
  readonly seqs?: number | undefined;
  readonly bytes?: number | undefined;
  readonly ageSec?: number | undefined;
}

export interface Scenario {
  readonly name: string;
  readonly losses: readonly Loss[];
  /** Seconds from the failure until the volume must be usable at the destination. */
  readonly deadlineSec: number;
  /** Required scenarios constrain release; optional ones are only reported. */
  readonly required: boolean;
  /** Recovery destination site; defaults to the state's `recovery.destination`. */
  readonly destination?: string | undefined;
  /** What loss still meets the contract (default: none). */
  readonly allowedLoss?: AllowedLoss | undefined;
}

/** One step of a timeline: these losses happen `afterSec` after the previous step (or the snapshot). */
export interface TimelineEvent {
  readonly afterSec: number;
  readonly losses: readonly Loss[];
}

/**
 * Sequential losses. Forwarding that completes before a step counts; forwarding still in flight
 * when its source or target is lost does not. `minIntervalSec` is the contract's assumption about
 * how far apart losses are; every step must be at least that far apart (0 = simultaneous allowed).
 */
export interface Timeline {
  readonly name: string;
  readonly minIntervalSec: number;
  readonly events: readonly TimelineEvent[];
  readonly deadlineSec: number;
  readonly required: boolean;
  readonly destination?: string | undefined;
  readonly allowedLoss?: AllowedLoss | undefined;
  /**
   * Repair before the next allowed failure: after every step but the last, the copies the step
   * destroyed must be re-made at `site` within `minIntervalSec` (the next step may come that
   * soon), over link bandwidth shared with the survivors' steady traffic. Absent: not checked.
   */
  readonly repair?: { readonly site: string } | undefined;
}
