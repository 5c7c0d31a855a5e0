import { z } from "zod";
import { defineMessage } from "./codec.ts";
import { bytes, fixedBytes, identifier, timestampMs, uint } from "./fields.ts";

/**
 * The message kinds of the lane data path. Each has one zod schema (the runtime validator) and
 * the TypeScript type inferred from it. Kinds owned by later parts (receipt batches, control
 * events, status documents) are defined next to their logic with `defineMessage`.
 */

/** Largest transport-unit encoding accepted. NATS' default max_payload is 1 MiB: servers that carry bigger units must raise it. */
export const UNIT_MAX_BYTES = 8 * 1024 * 1024;

/** Largest credit / credit-request encoding accepted (four identifiers of <= 128 chars, a few integers). */
export const CREDIT_MAX_BYTES = 4 * 1024;

/**
 * A lane transport unit: records `firstSeq..lastSeq` (inclusive) of one lane, written under
 * writer `term`, with one commit timestamp per record, the opaque (encrypted) payload and its
 * SHA-256 digest. Cross-field rules: `lastSeq >= firstSeq` and
 * `commitTs.length === lastSeq - firstSeq + 1`.
 */
export const unitSchema = z
  .object({
    volume: identifier,
    lane: identifier,
    term: uint,
    firstSeq: uint,
    lastSeq: uint,
    commitTs: z.array(timestampMs),
    payload: bytes,
    digest: fixedBytes(32),
  })
  .superRefine((u, ctx) => {
    if (u.lastSeq < u.firstSeq) {
      ctx.addIssue({ code: "custom", path: ["lastSeq"], message: `lastSeq ${u.lastSeq} is below firstSeq ${u.firstSeq}` });
    } else if (u.commitTs.length !== u.lastSeq - u.firstSeq + 1) {
      ctx.addIssue({ code: "custom", path: ["commitTs"], message: `needs one timestamp per record (${u.lastSeq - u.firstSeq + 1}), got ${u.commitTs.length}` });
    }
  });
/** A transport unit as decoded from the wire (structurally the lanes' `TransportUnit`). */
export type WireUnit = z.infer<typeof unitSchema>;
/** `unit` v1: a transport unit sent to a holder on `custody.v1.unit.<toHolder>.<volume>.<lane>`. */
export const unitSpec = defineMessage({ kind: "unit", version: 1, schema: unitSchema, maxBytes: UNIT_MAX_BYTES });

/**
 * A credit grant from `holder` to `sender` for one lane. `grantedThrough` is absolute: the total
 * number of payload bytes the sender may have sent on this lane since it started, so a lost or
 * duplicated grant is harmless (the largest one seen wins). `grantSeq` orders grants from one
 * holder incarnation.
 */
export const creditSchema = z.object({
  holder: identifier,
  sender: identifier,
  volume: identifier,
  lane: identifier,
  grantedThrough: uint,
  grantSeq: uint,
});
/** A credit grant as decoded from the wire. */
export type WireCredit = z.infer<typeof creditSchema>;
/** `credit` v1: sent by the holder on `custody.v1.credit.<holder>.<volume>.<lane>`. */
export const creditSpec = defineMessage({ kind: "credit", version: 1, schema: creditSchema, maxBytes: CREDIT_MAX_BYTES });

/** A sender asks `holder` for room for `wantBytes` more payload bytes on one lane. */
export const creditRequestSchema = z.object({
  sender: identifier,
  holder: identifier,
  volume: identifier,
  lane: identifier,
  wantBytes: uint,
});
/** A credit request as decoded from the wire. */
export type WireCreditRequest = z.infer<typeof creditRequestSchema>;
/** `credit-request` v1: a sender's request for credit. */
export const creditRequestSpec = defineMessage({ kind: "credit-request", version: 1, schema: creditRequestSchema, maxBytes: CREDIT_MAX_BYTES });
