import { CustodyError } from "../../core/index.ts";
import { receiptBatchSender } from "../../custody/index.ts";
import { verifyReceiptBatch } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { receiptSubject } from "../../transport/protocol/index.ts";
import { startConsumerSpan } from "../../transport/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { forgetReceipted } from "../hop/index.ts";
import type { HolderContext } from "./holder-context.ts";
import type { HolderLane } from "./holder-lane.ts";
import { EdgeReceiptError } from "../hop/index.ts";

/** What handling another holder's receipt may do besides the context: finish a transfer, release. */
export interface EdgeReceiptActions {
  completeTransfer(key: string, hl: HolderLane, from: string, stated: RangeSet): void;
  tryRelease(key: string, hl: HolderLane): void;
}

/**
 * True when a message on a lane's receipt subject is a batch this holder would not act on — its own
 * (the subject echoes it back) or one of a holder that is neither an edge of the lane nor the
 * transfer neighbor — read from the batch's head alone, so it can be passed over before it becomes
 * an actor event. With three holders batching every few milliseconds, most of what a last hop
 * receives on the subject is such batches. Anything whose head does not read as a v1 batch is not
 * ignorable: it goes the full way and is refused and counted there.
 */
export function ignoresLaneReceipt(h: HolderContext, key: string, data: Uint8Array): boolean {
  const from = receiptBatchSender(data);
  if (from === undefined) return false;
  const hl = h.lanes.get(key);
  return hl === undefined ? from === h.config.holderId : !actsOnReceiptsOf(h, hl, from);
}

/**
 * Whether this holder acts on `holderId`'s receipt batches on lane `hl`: an edge's or the transfer neighbor's, never
 * its own.
 */
function actsOnReceiptsOf(h: HolderContext, hl: HolderLane, holderId: string): boolean {
  return holderId !== h.config.holderId && (hl.edges.has(holderId) || holderId === h.config.transferNeighbor);
}

/**
 * A readable receipt batch of an edge or the transfer neighbor on one of our lanes (holder-step.ts
 * `readLaneReceipt` read its head): an edge's verified receipt drops that edge's pins; the neighbor's
 * verified receipt completes a transfer. A batch that fails verification (forged, stale
 * incarnation/epoch, wrong stream) is counted and changes nothing.
 */
export function applyLaneReceipt(
  h: HolderContext,
  act: EdgeReceiptActions,
  key: string,
  holderId: string,
  signed: { readonly body: Uint8Array; readonly signature: Uint8Array },
  msg: InboundMessage,
): void {
  const hl = h.lanes.get(key);
  if (hl === undefined || !actsOnReceiptsOf(h, hl, holderId)) return;
  const isEdge = hl.edges.has(holderId);
  const isNeighbor = holderId === h.config.transferNeighbor;
  const span = startConsumerSpan(h.tracer, "holder.edge_receipt", msg);
  try {
    const batch = verifyReceiptBatch(signed, {
      stream: { volume: hl.volume, lane: hl.lane, subject: receiptSubject(hl.volume, hl.lane) },
      holderKey: (id, inc) => h.ports.peers.key(id, inc),
      currentIncarnation: (id) => h.ports.peers.incarnation(id),
      topologyEpoch: h.config.epoch,
      policyGeneration: h.config.policyGeneration,
      released: () => RangeSet.EMPTY,
    });
    let stated = RangeSet.EMPTY;
    for (const r of batch.receipts) stated = stated.union(r.retained);
    if (isEdge) {
      const before = hl.obligations.receiptedBy(holderId);
      for (const r of batch.receipts) {
        const restarted = hl.obligations.applyEdgeReceipt({
          holder: holderId,
          incarnation: batch.holder.incarnation,
          epoch: r.topologyEpoch,
          receiptSeq: r.receiptSeq,
          retained: r.retained,
        });
        if (restarted) hl.sendLogs.get(holderId)?.reset();
      }
      forgetReceipted(hl, holderId, !before.coversAll(hl.obligations.receiptedBy(holderId)));
      h.observe({ type: "edge_receipt", lane: key, from: holderId, retained: stated.toString() });
    }
    if (isNeighbor) {
      h.observe({ type: "neighbor_receipt", lane: key, from: holderId, retained: stated.toString() });
      if (!hl.inTransfer.isEmpty) act.completeTransfer(key, hl, holderId, stated);
    }
    act.tryRelease(key, hl);
  } catch (err) {
    const code = err instanceof CustodyError ? err.code : "receipt_invalid";
    span.setAttribute("custody.rejected", code);
    h.counters.inc(`receipt_${code}`);
    h.observe({ type: "receipt_refused", lane: key, from: holderId, code });
    if (!(err instanceof CustodyError || err instanceof EdgeReceiptError)) throw err;
  } finally {
    span.end();
  }
}
