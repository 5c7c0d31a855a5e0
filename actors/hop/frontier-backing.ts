import { RangeSet } from "../../lanes/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import type { PeerDirectory } from "./peer-directory.ts";

/**
 * A release frontier counts only as far as the control log backs it. A publish on a release
 * subject proves nothing by itself (any connection may make one); an actor whose peer directory
 * follows the log believes a frontier at once when the log it has folded already holds it, and
 * otherwise catches up with the log first and then keeps only what the log holds. Shared by
 * holders (their own and their edges' frontiers) and the volume writer (its first hops').
 */
export class FrontierBacking {
  constructor(private readonly log: PeerDirectory) {}

  /** True when `ranges` released at `holder` may be applied now (backed, or nothing to check against). */
  backedNow(volume: string, lane: string, holder: string, ranges: RangeSet): boolean {
    return (
      this.log.releasedAt === undefined || this.log.releasedAt(obligationIdOf(volume, lane), holder).coversAll(ranges)
    );
  }

  /**
   * Catches up with the log through its current head (errors leave it as it was), then calls
   * `then`. Through the head: the controller committed before it published the frontier, and a
   * read that only drains the local tail could still miss that commit and count a legitimate
   * frontier as unverified.
   */
  catchUp(then: () => void): void {
    void (this.log.refresh?.(true) ?? Promise.resolve()).catch(() => undefined).then(then);
  }

  /** After catching up: the part of `ranges` the log holds, and whether some of it was not. */
  backed(
    volume: string,
    lane: string,
    holder: string,
    ranges: RangeSet,
  ): { readonly ranges: RangeSet; readonly unverified: boolean } {
    const held = ranges.intersect(this.log.releasedAt?.(obligationIdOf(volume, lane), holder) ?? ranges);
    return { ranges: held, unverified: !held.coversAll(ranges) };
  }
}
