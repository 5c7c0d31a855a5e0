import { z } from "zod";
import { defineMessage } from "./codec.ts";
import * as wireFields from "./fields.ts";

/**
 * Wire kinds the holder adds to the codec: release frontiers (controller → holder), custody
 * transfer offers (holder → neighbor) and holder events (contract violations, lifecycle).
 */

const ranges = z.array(z.tuple([wireFields.uint, wireFields.uint])).max(4096);

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

/**
 * `transfer-offer` v1 on `custody.v1.transfer.<toHolder>`: the origin offers custody of whole
 * units (each an encoded `unit` message, digest included, so the neighbor validates them like any
 * ingress). The neighbor answers only with its ordinary signed receipt on the lane's receipt subject.
 */
export const transferOfferSpec = defineMessage({
  kind: "transfer-offer",
  version: 1,
  schema: z.object({
    from: wireFields.identifier,
    to: wireFields.identifier,
    volume: wireFields.identifier,
    lane: wireFields.identifier,
    offerId: wireFields.uint,
    units: z.array(wireFields.bytes).min(1).max(1024),
  }),
  maxBytes: 8 * 1024 * 1024,
});
export type TransferOfferMessage = z.infer<typeof transferOfferSpec.schema>;

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
