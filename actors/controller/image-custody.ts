import { CustodyError, type Counters } from "../../core/index.ts";
import { HolderStatus, type ControlEventBody, type ControlState } from "../../custody/index.ts";
import { imageReleases, snapshotIdOf, type EvaluationState } from "../../policies/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { VolumeTopology } from "./controller-config.ts";

/** What the image custody needs of its controller (`commit` runs inside the evaluation round). */
export interface ImageCustodyPorts {
  readonly counters: Counters;
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }>;
  /** Sends `holder` its release frontier of `lane` under `obligationId`, as the log now has it. */
  publishFrontier(s: ControlState, obligationId: string, holder: string, lane: string): void;
}

/**
 * Ends custody of coalesced windows a base already contains (policies/image-release.ts), so a
 * derived lane's holders do not keep every window forever: each release is a `release_to_base`
 * under the derived lane's obligation (created with the volume's lanes), then the holder's
 * frontier is published as for raw releases. Without an obligation for the derived lane nothing
 * is released (counted).
 */
export class ImageCustody {
  constructor(
    private readonly topology: VolumeTopology,
    private readonly ports: ImageCustodyPorts,
  ) {}

  async step(s: ControlState, state: EvaluationState): Promise<ControlState> {
    const derivedOf = new Map(Object.entries(this.topology.coalesced ?? {}).map(([derived, raw]) => [raw, derived]));
    if (derivedOf.size === 0) return s;
    for (const r of imageReleases(state, (id) => s.holders[id]?.status === HolderStatus.active)) {
      const lane = derivedOf.get(r.lane);
      const obligationId = obligationIdOf(this.topology.volume, lane ?? r.lane);
      const o = lane === undefined ? undefined : s.obligations[obligationId];
      if (lane === undefined || o === undefined) {
        this.ports.counters.inc("image_release_no_obligation");
        continue;
      }
      const ranges = r.ranges
        .subtract(o.released[r.holder] ?? RangeSet.EMPTY)
        .intersect(o.responsible[r.holder] ?? RangeSet.EMPTY);
      if (ranges.isEmpty) continue;
      const body: ControlEventBody = {
        type: "release_to_base",
        obligationId,
        holderId: r.holder,
        ranges,
        baseHolder: r.base.holder,
        snapshotId: snapshotIdOf(r.base),
        baseThroughSeq: r.base.cut[r.lane]!,
      };
      try {
        s = (await this.ports.commit(() => body)).state;
        this.ports.counters.inc("image_release_committed");
        this.ports.publishFrontier(s, obligationId, r.holder, lane);
      } catch (err) {
        this.ports.counters.inc(`image_release_${err instanceof CustodyError ? err.code : "failed"}`);
      }
    }
    return s;
  }
}
