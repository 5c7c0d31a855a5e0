import { z } from "zod";
import { defineMessage } from "../transport/protocol/index.ts";
import { bytes, fixedBytes } from "../transport/protocol/index.ts";
import { ED25519_SIGNATURE_BYTES } from "./signing.ts";
import { CONTROL_SNAPSHOT_MAX_BYTES } from "./control-snapshot.ts";

/**
 * Wire kinds of the custody vocabulary. Both carry canonical bytes rather than a re-encodable
 * object, because the signature (receipts) and the hash chain (control events) are over exact bytes.
 */

/** Largest receipt-batch message: the default NATS max_payload. */
export const RECEIPT_BATCH_MAX_BYTES = 1024 * 1024;
/** Largest control-event message. */
export const CONTROL_EVENT_MAX_BYTES = 256 * 1024;

/** `receipt-batch` v1: `body` = canonical batch bytes (`encodeReceiptBatch`), `signature` = Ed25519 over `body`. */
export const receiptBatchSchema = z.object({ body: bytes, signature: fixedBytes(ED25519_SIGNATURE_BYTES) });
export const receiptBatchSpec = defineMessage({
  kind: "receipt-batch",
  version: 1,
  schema: receiptBatchSchema,
  maxBytes: RECEIPT_BATCH_MAX_BYTES,
});

/** `control-event` v1: `event` = canonical event bytes (`encodeControlEvent`); its SHA-256 is the chain link. */
export const controlEventSchema = z.object({
  event: bytes,
  /** Signed logs: who signed the event's hash, and the 64-byte Ed25519 signature (see control-trust.ts). */
  signer: z.string().min(1).max(128).optional(),
  signature: bytes.optional(),
});
export const controlEventSpec = defineMessage({
  kind: "control-event",
  version: 1,
  schema: controlEventSchema,
  maxBytes: CONTROL_EVENT_MAX_BYTES,
});

/**
 * `control-snapshot` v1, stored in the control stream beside control events: `snapshot` = canonical
 * snapshot bytes (`encodeControlSnapshot`, control-snapshot.ts); in a signed log the operator's
 * signature of their SHA-256 at the position they are committed at (as for an event).
 */
export const controlSnapshotSchema = z.object({
  snapshot: bytes,
  signer: z.string().min(1).max(128).optional(),
  signature: bytes.optional(),
});
export const controlSnapshotSpec = defineMessage({
  kind: "control-snapshot",
  version: 1,
  schema: controlSnapshotSchema,
  maxBytes: CONTROL_SNAPSHOT_MAX_BYTES,
});
