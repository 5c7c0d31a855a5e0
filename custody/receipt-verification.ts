import type { KeyObject } from "node:crypto";
import type { RangeSet } from "../lanes/index.ts";
import type { ResidencyEvidence } from "./evidence.ts";
import { KNOWN_EXTENSION_KINDS } from "./receipt.ts";
import { decodeReceiptBatch, type ReceiptBatch, type ReceiptStream, type SignedReceiptBatch } from "./receipt-batch.ts";
import { ReceiptError, ReceiptErrorCode } from "./receipt-error.ts";
import { verifyBytes } from "./signing.ts";

/**
 * What a verifier knows, normally derived from the folded control log (`receiptVerifyContext` in
 * `control-state.ts`): the stream the batch arrived on, admitted holder keys and incarnations, the
 * current topology epoch and policy generation, and the ranges already released.
 */
export interface ReceiptVerifyContext {
  /** The stream (volume, lane, receipt subject) the batch was received on. */
  readonly stream: ReceiptStream;
  /** The admitted public key of this holder incarnation, if any. */
  holderKey(holderId: string, incarnation: number): KeyObject | undefined;
  /** The newest admitted incarnation of the holder, if it was ever admitted. */
  currentIncarnation(holderId: string): number | undefined;
  readonly topologyEpoch: number;
  readonly policyGeneration: number;
  /** Ranges the control log has released for this holder on this stream and obligation. */
  released(holderId: string, volume: string, lane: string, obligationId: string): RangeSet;
}

type DecodedBatch = ReturnType<typeof decodeReceiptBatch>;

/** The batch's signer: an admitted, current incarnation whose key verifies the signature. */
function checkSigner(signed: SignedReceiptBatch, batch: DecodedBatch, ctx: ReceiptVerifyContext): void {
  const { holderId, incarnation } = batch.holder;
  const current = ctx.currentIncarnation(holderId);
  if (current !== undefined && incarnation < current) {
    throw new ReceiptError(
      ReceiptErrorCode.stale_incarnation,
      `holder ${holderId} incarnation ${incarnation} was superseded by ${current}`,
      { holderId, incarnation, current },
    );
  }
  const key = ctx.holderKey(holderId, incarnation);
  if (key === undefined && current !== undefined && incarnation > current) {
    throw new ReceiptError(
      ReceiptErrorCode.unadmitted_incarnation,
      `holder ${holderId} incarnation ${incarnation} is not admitted yet (admitted: ${current})`,
      { holderId, incarnation, current },
    );
  }
  if (key === undefined) {
    throw new ReceiptError(
      ReceiptErrorCode.unknown_holder_key,
      `no key is admitted for holder ${holderId} incarnation ${incarnation}`,
      { holderId, incarnation },
    );
  }
  if (!verifyBytes(key, signed.body, signed.signature)) {
    throw new ReceiptError(
      ReceiptErrorCode.bad_signature,
      `signature of holder ${holderId} incarnation ${incarnation} does not verify`,
      { holderId, incarnation },
    );
  }
}

/** The batch is bound to the stream it was received on. */
function checkStream(batch: DecodedBatch, ctx: ReceiptVerifyContext): void {
  const { holderId } = batch.holder;
  const s = batch.stream;
  if (s.volume !== ctx.stream.volume || s.lane !== ctx.stream.lane || s.subject !== ctx.stream.subject) {
    throw new ReceiptError(
      ReceiptErrorCode.wrong_stream,
      `batch is bound to ${s.subject} (${s.volume}/${s.lane}), received on ${ctx.stream.subject}`,
      { holderId, bound: s, received: ctx.stream },
    );
  }
}

/** One receipt: current epoch and generation, understood evidence and extensions, nothing released claimed again. */
function checkReceipt(r: DecodedBatch["receipts"][number], holderId: string, ctx: ReceiptVerifyContext): void {
  const at = { holderId, receiptSeq: r.receiptSeq };
  if (r.topologyEpoch < ctx.topologyEpoch) {
    throw new ReceiptError(
      ReceiptErrorCode.stale_epoch,
      `receipt ${r.receiptSeq} of ${holderId} is from topology epoch ${r.topologyEpoch} < ${ctx.topologyEpoch}`,
      { ...at, epoch: r.topologyEpoch, current: ctx.topologyEpoch },
    );
  }
  if (r.policyGeneration < ctx.policyGeneration) {
    throw new ReceiptError(
      ReceiptErrorCode.stale_generation,
      `receipt ${r.receiptSeq} of ${holderId} is from policy generation ${r.policyGeneration} < ` +
        `${ctx.policyGeneration}`,
      { ...at, generation: r.policyGeneration, current: ctx.policyGeneration },
    );
  }
  if (r.topologyEpoch > ctx.topologyEpoch || r.policyGeneration > ctx.policyGeneration) {
    // The verifier has not folded the control events that created this epoch/generation yet.
    throw new ReceiptError(
      ReceiptErrorCode.ahead_of_verifier,
      `receipt ${r.receiptSeq} of ${holderId} names epoch ${r.topologyEpoch}/generation ${r.policyGeneration}, ` +
        `ahead of this verifier`,
      { ...at, epoch: r.topologyEpoch, generation: r.policyGeneration },
    );
  }
  if (r.residency.kind === "unrecognized") {
    throw new ReceiptError(
      ReceiptErrorCode.unsupported_evidence,
      `receipt ${r.receiptSeq} of ${holderId} carries evidence kind ${JSON.stringify(r.residency.wireKind)} this ` +
        `peer does not understand`,
      { ...at, evidenceKind: r.residency.wireKind },
    );
  }
  for (const x of r.extensions) {
    if (x.required && !KNOWN_EXTENSION_KINDS.has(x.kind)) {
      throw new ReceiptError(
        ReceiptErrorCode.unsupported_evidence,
        `receipt ${r.receiptSeq} of ${holderId} requires unknown extension ${JSON.stringify(x.kind)}`,
        { ...at, extension: x.kind },
      );
    }
  }
  const gone = r.retained.intersect(ctx.released(holderId, r.volume, r.lane, r.obligation.obligationId));
  if (!gone.isEmpty) {
    throw new ReceiptError(
      ReceiptErrorCode.range_regression,
      `receipt ${r.receiptSeq} of ${holderId} claims ranges ${gone.toString()} already released`,
      { ...at, obligationId: r.obligation.obligationId, ranges: gone.toJSON() },
    );
  }
}

/**
 * Decodes and verifies a signed batch. Returns the batch with only understood evidence, or throws
 * a ReceiptError, checking in this order: `malformed` / `unsupported_version` (decoding),
 * `stale_incarnation`, `unadmitted_incarnation`, `unknown_holder_key`, `bad_signature`, `wrong_stream`, `stale_epoch`,
 * `stale_generation`, `ahead_of_verifier`, `unsupported_evidence`, `range_regression`. Pure:
 * verification changes nothing anywhere.
 */
export function verifyReceiptBatch(signed: SignedReceiptBatch, ctx: ReceiptVerifyContext): ReceiptBatch {
  const batch = decodeReceiptBatch(signed.body);
  checkSigner(signed, batch, ctx);
  checkStream(batch, ctx);
  for (const r of batch.receipts) checkReceipt(r, batch.holder.holderId, ctx);
  // Every residency was checked above to be a kind this version understands.
  return batch as ReceiptBatch<ResidencyEvidence>;
}
