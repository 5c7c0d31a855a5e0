import { CustodyError } from "../../core/index.ts";
import { HolderStatus, type ControlLogEntry } from "../../custody/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import type { ControllerHandle } from "./controller-handle.ts";
import { checkFailoverRequest, type FailoverRequest } from "./failover-request-check.ts";

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

/** Thrown when a failover the folded log says is committed has no entry in the log to name (it never is). */
export class FailoverRecordMissingError extends CustodyError {
  constructor(what: string) {
    super("failover_record_missing", `the control log holds no ${what}`, { what });
  }
}

/** The highest sequence any holder receipted on `lane` of `volume`, as the controller's ledger knows it. */
function receiptedHead(controller: ControllerHandle, volume: string, lane: string): number {
  let top = 0;
  for (const h of controller.ledger.holdings({ volume, lane }))
    top = Math.max(top, h.retained.max ?? 0, h.prefix.through);
  return top;
}

/**
 * Records a failover in the control log before the new writer starts (checked first by
 * `checkFailoverRequest`): per lane, a `commit_failover` naming the recovered cut, the old term's
 * head and the new first sequence (the fold refuses a term that does not advance or a cut above the
 * head), then an obligation `<volume>-<lane>-term<N>` from `firstSeq`, held by the lane's active
 * holders. `firstSeq` is above both the recovered cut and every sequence a holder receipted under
 * the old term, so no unit of the new history can collide with an old-term unit (sequences between
 * the cut and `firstSeq` are abandoned old history). A step the log already holds for this term and
 * cut (the same request again after a lost reply, or after a crash between two steps) is not
 * committed again: its sequence is read back from the log, so a retry answers the committed plan.
 * Throws FailoverRequestRefusedError, ControlFenceError / ControlConflictError from the commit.
 */
export async function commitFailover(controller: ControllerHandle, req: FailoverRequest): Promise<FailoverPlan> {
  const { volume, term } = req;
  const lanes = checkFailoverRequest(controller.follower.state, controller.config.topology, req, (lane) =>
    receiptedHead(controller, volume, lane),
  );
  const recoveredCut: Record<string, number> = {};
  const firstSeq: Record<string, number> = {};
  const oldHead: Record<string, number> = {};
  const failoverSeq: Record<string, number> = {};
  const controlSeq: Record<string, number> = {};
  let log: readonly ControlLogEntry[] | undefined;
  const seqOf = async (what: string, match: (e: ControlLogEntry) => boolean) => {
    log ??= await controller.ports.store.readAll();
    const found = log.findLast(match);
    if (found === undefined) throw new FailoverRecordMissingError(what);
    return found.seq;
  };
  for (const { lane, cut, oldHead: top, committed } of lanes) {
    recoveredCut[lane] = cut;
    firstSeq[lane] = top + 1;
    oldHead[lane] = top;
    const obligationId = `${obligationIdOf(volume, lane)}-term${term}`;
    failoverSeq[lane] = committed
      ? await seqOf(
          `commit_failover of ${volume}/${lane} to term ${term}`,
          ({ event: e }) => e.type === "commit_failover" && e.volume === volume && e.lane === lane && e.term === term,
        )
      : (
          await controller.commit(() => ({
            type: "commit_failover",
            volume,
            lane,
            term,
            recoveredCut: cut,
            oldHead: top,
            firstSeq: top + 1,
          }))
        ).seq;
    if (controller.follower.state.obligations[obligationId] !== undefined) {
      controlSeq[lane] = await seqOf(
        `obligation ${obligationId}`,
        ({ event: e }) => e.type === "create_obligation" && e.obligationId === obligationId,
      );
      continue;
    }
    const { seq } = await controller.commit((s) => {
      const o = s.obligations[obligationIdOf(volume, lane)];
      const holders = Object.keys(o?.responsible ?? {}).filter((h) => s.holders[h]?.status === HolderStatus.active);
      return {
        type: "create_obligation",
        obligationId,
        volume,
        lane,
        representation: "raw",
        holders,
        fromSeq: top + 1,
      };
    });
    controlSeq[lane] = seq;
  }
  return { term, recoveredCut, oldHead, firstSeq, failoverSeq, controlSeq };
}
