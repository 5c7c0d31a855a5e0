import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { decodeMessage } from "../../transport/protocol/index.ts";
import type { FrontierBacking } from "../hop/index.ts";
import { laneKey } from "./holder-config.ts";
import type { HolderContext } from "./holder-context.ts";
import type { HolderLane } from "./holder-lane.ts";
import { releaseFrontierSpec } from "../../transport/protocol/index.ts";

/** A release frontier that passed its checks, and whether the control log backs it already. */
export interface ReadFrontier {
  readonly key: string;
  readonly hl: HolderLane;
  readonly holder: string;
  readonly ranges: RangeSet;
  readonly backed: boolean;
}

/**
 * A release frontier from the control log. Ours authorizes ranges, then releases whole segments;
 * an edge's ends what we owe that edge there (a unit it released before its receipt reached us
 * would otherwise stay pinned for it forever). When our peer directory follows the log, a
 * frontier counts only as far as the log backs it: beyond what we have folded the caller catches
 * up first (`releaseChecked`), and what the log still does not hold is refused as
 * `release_unverified`. Returns undefined (counted) for a frontier that is not for us, stale or
 * malformed.
 */
export function readReleaseFrontier(
  h: HolderContext,
  frontiers: FrontierBacking,
  msg: InboundMessage,
): ReadFrontier | undefined {
  let f;
  try {
    f = decodeMessage(releaseFrontierSpec, msg.data);
  } catch (err) {
    return void h.reject(err instanceof CustodyError ? err.code : "malformed");
  }
  const key = laneKey(f.volume, f.lane);
  const hl = h.lanes.get(key);
  if (f.holder !== h.config.holderId && !hl?.edges.has(f.holder)) return void h.reject("wrong_holder");
  if (f.epoch < h.config.epoch) return void h.reject("stale_epoch");
  if (hl === undefined) return void h.reject("unknown_lane");
  const ranges = RangeSet.fromJSON(f.ranges);
  return { key, hl, holder: f.holder, ranges, backed: frontiers.backedNow(hl.volume, hl.lane, f.holder, ranges) };
}
