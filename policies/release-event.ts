import { CustodyError } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import type { ControlEventBody } from "../custody/index.ts";
import { HolderStatus, type ControlState } from "../custody/index.ts";
import type { BaseSnapshot, EvaluationState } from "./evaluation-state.ts";
import { withoutStaleClaims, type ReleaseRequest } from "./release.ts";

/**
 * The control event that carries out a granted release request, as the control log's fold will
 * check it: a `release_ranges` naming the active holders responsible for and freshly holding every
 * released range (`reliesOn`), narrowed to what the best single keeper holds when the policy counted
 * several keepers together (`narrowed`), or a `release_to_base` when an active holder's base
 * contains the ranges. Throws CustodyError (`unknown_obligation`, `nothing_to_release`,
 * `release_not_covered`) to abstain. Pure.
 */
export function releaseEventFor(
  cur: ControlState,
  obligationId: string,
  req: ReleaseRequest,
  state: EvaluationState,
): { body: ControlEventBody; narrowed: boolean } {
  const o = cur.obligations[obligationId];
  if (o === undefined) throw new CustodyError("unknown_obligation", `no obligation ${obligationId}`, { obligationId });
  const already = o.released[req.holder] ?? RangeSet.EMPTY;
  const ranges = req.ranges.subtract(already).intersect(o.responsible[req.holder] ?? RangeSet.EMPTY);
  if (ranges.isEmpty)
    throw new CustodyError("nothing_to_release", "ranges already released or not this holder's responsibility", {});
  // Who keeps what this release gives up: active holders responsible for it with fresh claims on it.
  const keepers = withoutStaleClaims(state)
    .holders.filter((h) => h.id !== req.holder && cur.holders[h.id]?.status === HolderStatus.active)
    .map((h) => ({
      id: h.id,
      keeps: h.claims
        .filter((c) => c.lane === req.lane)
        .reduce((a, c) => a.union(c.ranges), RangeSet.EMPTY)
        .intersect(ranges)
        .intersect(o.responsible[h.id] ?? RangeSet.EMPTY),
    }));
  const reliesOn = keepers.filter((k) => k.keeps.coversAll(ranges)).map((k) => k.id);
  if (reliesOn.length > 0)
    return { body: { type: "release_ranges", obligationId, holderId: req.holder, ranges, reliesOn }, narrowed: false };
  // The policy may have counted several keepers together (one holds the older part, another the
  // newer). The control log wants one keeper responsible for every released range, so release the
  // part the best single keeper has — a subset of an authorized release is safe — unless a base
  // covers everything.
  const best = keepers.sort((a, b) => b.keeps.count - a.keeps.count)[0];
  const coveredByBase = state.bases.some(
    (b) => (b.cut[req.lane] ?? -1) >= (ranges.max ?? 0) && cur.holders[b.holder]?.status === HolderStatus.active,
  );
  if (!coveredByBase && best !== undefined && !best.keeps.isEmpty) {
    return {
      body: { type: "release_ranges", obligationId, holderId: req.holder, ranges: best.keeps, reliesOn: [best.id] },
      narrowed: true,
    };
  }
  // No other holder keeps them: a base an active holder keeps may contain them (a rolling base).
  const base = state.bases
    .filter(
      (b) => (b.cut[req.lane] ?? -1) >= (ranges.max ?? 0) && cur.holders[b.holder]?.status === HolderStatus.active,
    )
    .sort((a, b) => (b.cut[req.lane] ?? 0) - (a.cut[req.lane] ?? 0))[0];
  if (base === undefined)
    throw new CustodyError(
      "release_not_covered",
      "no active responsible holder retains these ranges and no base contains them",
      { holder: req.holder },
    );
  return {
    body: {
      type: "release_to_base",
      obligationId,
      holderId: req.holder,
      ranges,
      baseHolder: base.holder,
      snapshotId: snapshotIdOf(base),
      baseThroughSeq: base.cut[req.lane]!,
    },
    narrowed: false,
  };
}

/** The snapshot id a `release_to_base` names for `base` (a rolling base's id is `<holder>/<snapshot>`). */
export function snapshotIdOf(base: BaseSnapshot): string {
  return base.id.slice(base.id.indexOf("/") + 1);
}
