import { z } from "zod";
import { decodeMessage, defineMessage, encodeMessage, WireError, WireErrorCode } from "./codec.ts";
import * as wireFields from "./fields.ts";

/**
 * Wire kinds the holder adds to the codec: release frontiers (controller → holder), custody
 * transfer offers (holder → neighbor) and holder events (contract violations, lifecycle).
 */

const ranges = wireFields.seqRanges(4096);

/**
 * `release-frontier` v1 on `custody.v1.release.<holder>`: ranges of one lane the control log has
 * authorized this holder to release, committed under `epoch` at control-log sequence `controlSeq`.
 * A frontier only ever adds authorization; it never un-releases anything.
 */
export const releaseFrontierSpec = defineMessage({
  kind: "release-frontier",
  version: 1,
  schema: z.object({
    holder: wireFields.identifier,
    volume: wireFields.identifier,
    lane: wireFields.identifier,
    ranges,
    epoch: wireFields.uint,
    controlSeq: wireFields.uint,
  }),
  maxBytes: 256 * 1024,
});
export type ReleaseFrontierMessage = z.infer<typeof releaseFrontierSpec.schema>;

const transferOfferFields = {
  from: wireFields.identifier,
  to: wireFields.identifier,
  volume: wireFields.identifier,
  lane: wireFields.identifier,
  offerId: wireFields.uint,
  units: z.array(wireFields.bytes).min(1).max(1024),
};

/**
 * `transfer-offer` v1 on `custody.v1.transfer.<toHolder>`: the origin offers custody of whole
 * units (each an encoded `unit` message, digest included, so the neighbor validates them like any
 * ingress). The neighbor answers only with its ordinary signed receipt on the lane's receipt subject.
 */
export const transferOfferSpec = defineMessage({
  kind: "transfer-offer",
  version: 1,
  schema: z.object(transferOfferFields),
  maxBytes: 8 * 1024 * 1024,
});
export type TransferOfferMessage = z.infer<typeof transferOfferSpec.schema>;

/** Longest attestation token accepted in an offer (a full 32-unit attestation is 1,632 bytes plus two names). */
const MAX_ATTESTATION_BYTES = 4096;

/**
 * `transfer-offer` v2: v1 plus `attestations`, the writer attestations (raw token bytes, see
 * custody/unit-attestation.ts) covering the offered units, so a neighbor that checks units checks
 * an offer's units against the writer's own signature exactly as it checks ingress.
 */
export const transferOfferV2Spec = defineMessage({
  kind: "transfer-offer",
  version: 2,
  schema: z.object({
    ...transferOfferFields,
    attestations: z
      .array(
        wireFields.bytes.refine((b) => b.byteLength > 0 && b.byteLength <= MAX_ATTESTATION_BYTES, {
          message: `an attestation has 1..${MAX_ATTESTATION_BYTES} bytes`,
        }),
      )
      .max(1024),
  }),
  maxBytes: 12 * 1024 * 1024,
});

/** An offer as read (either version), with its attestation tokens in base64 (none for v1). */
export interface ReadTransferOffer {
  readonly offer: TransferOfferMessage;
  readonly attestations: readonly string[];
}

/** Decodes a `transfer-offer` of v1 or v2. Throws WireError like `decodeMessage`. */
export function decodeTransferOffer(bytes: Uint8Array): ReadTransferOffer {
  try {
    const v2 = decodeMessage(transferOfferV2Spec, bytes);
    return {
      offer: v2,
      attestations: v2.attestations.map((a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64")),
    };
  } catch (err) {
    if (!(err instanceof WireError) || err.code !== WireErrorCode.UnsupportedVersion) throw err;
  }
  return { offer: decodeMessage(transferOfferSpec, bytes), attestations: [] };
}

/** Encodes an offer: v2 when some unit has an attestation token (base64), else v1 as before. */
export function encodeTransferOffer(offer: TransferOfferMessage, attestations: Iterable<string>): Uint8Array {
  const tokens = [...new Set(attestations)];
  if (tokens.length === 0) return encodeMessage(transferOfferSpec, offer);
  return encodeMessage(transferOfferV2Spec, {
    ...offer,
    attestations: tokens.map((t) => new Uint8Array(Buffer.from(t, "base64"))),
  });
}

/**
 * `base-ready` v1 on `custody.v1.base.<holder>`: the base builder beside `holder` materialized a
 * base snapshot of `volume` containing `lane` through `throughSeq` (from the holder's own WAL), made
 * it durable, and keeps it until a newer one exists. The holder names it in its receipts; WAL the
 * base covers may then be released where the contract allows.
 */
export const baseReadySpec = defineMessage({
  kind: "base-ready",
  version: 1,
  schema: z.object({
    holder: wireFields.identifier,
    volume: wireFields.identifier,
    lane: wireFields.identifier,
    snapshotId: wireFields.identifier,
    throughSeq: wireFields.uint,
    bytes: wireFields.uint,
  }),
  maxBytes: 4096,
});
export type BaseReadyMessage = z.infer<typeof baseReadySpec.schema>;

/** Kinds of holder events. */
export const HolderEventKind = {
  /** Promised coverage was actually lost (e.g. protected RAM could not be evacuated in time). */
  ContractViolation: "contract_violation",
  /** The holder changed lifecycle state. */
  Lifecycle: "lifecycle",
} as const;
export type HolderEventKind = (typeof HolderEventKind)[keyof typeof HolderEventKind];

/** `holder-event` v1 on `custody.v1.event.<volume>`. */
export const holderEventSpec = defineMessage({
  kind: "holder-event",
  version: 1,
  schema: z.object({
    event: z.enum(["contract_violation", "lifecycle"]),
    holder: wireFields.identifier,
    incarnation: wireFields.uint,
    volume: wireFields.identifier,
    lane: wireFields.identifier.optional(),
    /** Sequences whose promised coverage was lost (violation) — empty for lifecycle events. */
    ranges,
    reason: z.string().max(256),
    at: wireFields.timestampMs,
  }),
  maxBytes: 256 * 1024,
});
export type HolderEventMessage = z.infer<typeof holderEventSpec.schema>;
