import { BadRequestError } from "./volume-errors.ts";

/** How to bring a peer back to the primary's state. */
export const RecoveryDecision = {
  NoRecovery: "no_recovery",
  CatchUp: "catch_up",
  DeltaRebuild: "delta_rebuild",
  FullRebuild: "full_rebuild",
} as const;
/** One of the RecoveryDecision values. */
export type RecoveryDecision = (typeof RecoveryDecision)[keyof typeof RecoveryDecision];

/** Inputs of the decision: the peer's flushed LSN R and the primary's WAL window S..H. */
export interface RecoveryInputs {
  /** R: highest LSN the peer reports as durable (0 = empty peer). */
  replicaFlushedLsn: number;
  /** S: oldest LSN still held in the primary's WAL (head + 1 when the WAL holds nothing). */
  walStart: number;
  /** H: newest LSN in the primary's WAL. */
  walHead: number;
  /**
   * LSN from which a dirty map for this peer tracks changes, when one exists. Omitted: the
   * primary's dirty map is assumed to cover any peer with a non-empty base (R > 0).
   */
  dirtyMapSince?: number;
}

/**
 * The recovery rule (pure; documented in docs/volume-format.md):
 * 1. R = H → no_recovery.
 * 2. R > H → full_rebuild: the peer holds writes the primary never made durable; they cannot be
 *    named by LSN, so only a full copy makes it equal.
 * 3. R + 1 ≥ S → catch_up: every record R+1..H is still in the WAL (data re-read from the extent).
 * 4. R > 0 and the dirty map covers R (dirtyMapSince ≤ R, or no bound given) → delta_rebuild:
 *    ship the dirty LBAs from a checkpoint snapshot.
 * 5. otherwise → full_rebuild.
 * Throws BadRequestError on negative or non-integer LSNs, or S > H + 1.
 */
export function decideRecovery(inp: RecoveryInputs): { decision: RecoveryDecision; reason: string } {
  const { replicaFlushedLsn: R, walStart: S, walHead: H, dirtyMapSince } = inp;
  for (const [name, v] of [
    ["replicaFlushedLsn", R],
    ["walStart", S],
    ["walHead", H],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 0)
      throw new BadRequestError(`${name} must be a non-negative integer`, { [name]: v });
  }
  if (S < 1 || S > H + 1) throw new BadRequestError(`WAL window ${S}..${H} is impossible`, { walStart: S, walHead: H });
  if (dirtyMapSince !== undefined && (!Number.isSafeInteger(dirtyMapSince) || dirtyMapSince < 0)) {
    throw new BadRequestError("dirtyMapSince must be a non-negative integer", { dirtyMapSince });
  }
  if (R === H) return { decision: RecoveryDecision.NoRecovery, reason: `peer is at the head ${H}` };
  if (R > H) return { decision: RecoveryDecision.FullRebuild, reason: `peer LSN ${R} is past the primary head ${H}` };
  if (R + 1 >= S) return { decision: RecoveryDecision.CatchUp, reason: `records ${R + 1}..${H} are in the WAL` };
  if (R > 0 && (dirtyMapSince === undefined || dirtyMapSince <= R)) {
    return {
      decision: RecoveryDecision.DeltaRebuild,
      reason: `records after ${R} were recycled; dirty map covers them`,
    };
  }
  return {
    decision: RecoveryDecision.FullRebuild,
    reason: R === 0 ? "peer has no base" : `dirty map starts at ${dirtyMapSince}, after peer LSN ${R}`,
  };
}
