import { HolderStatus } from "../../custody/index.ts";
import { obligationIdOf } from "../../protocol/index.ts";
import type { ControllerCore } from "./controller-core.ts";

/** Where a new writer term starts on each lane, and the control-log entry that records it. */
export interface FailoverPlan {
  readonly term: number;
  /** Lane → the recovered cut the new history continues from. */
  readonly recoveredCut: Readonly<Record<string, number>>;
  /** Lane → the old term's head: the highest sequence any holder receipted (cut+1 .. head is abandoned). */
  readonly oldHead: Readonly<Record<string, number>>;
  /** Lane → first sequence of the new term (above every sequence any holder ever receipted). */
  readonly firstSeq: Readonly<Record<string, number>>;
  /** Lane → control-log sequence of the `commit_failover` recording cut, old head and first sequence. */
  readonly failoverSeq: Readonly<Record<string, number>>;
  /** Lane → control-log sequence of the `create_obligation` recording it. */
  readonly controlSeq: Readonly<Record<string, number>>;
}

/**
 * Records a failover in the control log before the new writer starts: per lane, a
 * `commit_failover` naming the recovered cut, the old term's head and the new first sequence (the
 * fold refuses a term that does not advance or a cut above the head), then an obligation
 * `<volume>-<lane>-term<N>` from `firstSeq`, held by the lane's active holders. `firstSeq` is above
 * both the recovered cut and every sequence a holder receipted under the old term, so no unit of
 * the new history can collide with an old-term unit (sequences between the cut and `firstSeq` are
 * abandoned old history). Throws ControlFenceError / ControlConflictError from the commit.
 */
export async function commitFailover(controller: ControllerCore, volume: string, lanes: readonly string[], term: number, recoveredCut: Readonly<Record<string, number>>): Promise<FailoverPlan> {
  const firstSeq: Record<string, number> = {};
  const oldHead: Record<string, number> = {};
  const failoverSeq: Record<string, number> = {};
  const controlSeq: Record<string, number> = {};
  for (const lane of lanes) {
    let top = recoveredCut[lane] ?? 0;
    for (const h of controller.ledger.holdings({ volume, lane })) top = Math.max(top, h.retained.max ?? 0, h.prefix.through);
    firstSeq[lane] = top + 1;
    oldHead[lane] = top;
    const cut = recoveredCut[lane] ?? 0;
    failoverSeq[lane] = (await controller.commit(() => ({ type: "commit_failover", volume, lane, term, recoveredCut: cut, oldHead: top, firstSeq: top + 1 }))).seq;
    const { seq } = await controller.commit((s) => {
      const o = s.obligations[obligationIdOf(volume, lane)];
      const holders = Object.keys(o?.responsible ?? {}).filter((h) => s.holders[h]?.status === HolderStatus.active);
      return { type: "create_obligation", obligationId: `${obligationIdOf(volume, lane)}-term${term}`, volume, lane, representation: "raw", holders, fromSeq: top + 1 };
    });
    controlSeq[lane] = seq;
  }
  return { term, recoveredCut, oldHead, firstSeq, failoverSeq, controlSeq };
}
