import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import type { Holder } from "../holder/index.ts";
import { holderLaneKey as laneKey } from "../../core/index.ts";

/**
 * Where repair and recovery read surviving units from. A source yields whole, digest-carrying
 * units (ciphertext): it never needs the data key.
 */
export interface SurvivorSource {
  readonly holderId: string;
  /** Units of `lane` intersecting `ranges` that the source still retains (copies, safe to keep). */
  units(volume: string, lane: string, ranges: RangeSet): TransportUnit[];
}

/**
 * A source over an in-process holder's RAM-resident arena segments. Payloads are copied, so the
 * result stays valid after the holder recycles its segments.
 */
export function holderSource(holder: Holder): SurvivorSource {
  return {
    holderId: holder.id,
    units: (volume, lane, ranges) => holder.lane(volume, lane)?.ramUnits(ranges) ?? [],
  };
}
