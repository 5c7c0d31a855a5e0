import type { KeyObject } from "node:crypto";
import type { RangeSet } from "../../lanes/index.ts";

/** Public keys of peer holders (normally folded from the control log's `admit_holder` events). */
export interface PeerDirectory {
  key(holderId: string, incarnation: number): KeyObject | undefined;
  incarnation(holderId: string): number | undefined;
  /**
   * What the control log has released at `holderId` under `obligationId`, as of the last refresh.
   * A directory that follows the log has it, and then a release frontier is believed only as far
   * as the log backs it (a publish on the release subject proves nothing by itself).
   */
  releasedAt?(obligationId: string, holderId: string): RangeSet;
  /** Catches up with the log now; `toHead`: with every entry committed by now (ControlLogPeers.refresh). */
  refresh?(toHead?: boolean): Promise<unknown>;
  /**
   * The part of `seqs` this holder may persist, when the log names the lane's persistence targets
   * (a directory that does not follow the log: everything).
   */
  flushable?(holderId: string, volume: string, lane: string, seqs: RangeSet): RangeSet;
}
