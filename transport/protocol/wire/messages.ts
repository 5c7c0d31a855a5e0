import { z } from "zod";
import { defineMessage } from "./codec.ts";
import { identifier, uint } from "./fields.ts";
import { isValidToken } from "../subjects.ts";
import { FRAME_MAX_UNITS, UNIT_MAX_BYTES } from "./limits.ts";
import { fastDecodeUnit } from "./unit-fast-decode.ts";
import { fastDecodeUnitFrame } from "./unit-frame-codec.ts";
import { unitFrameSchema, unitSchema, type WireUnit, type WireUnitFrame } from "./unit-schemas.ts";

/**
 * The message kinds of the lane data path. Each has one zod schema (the runtime validator) and
 * the TypeScript type inferred from it. Kinds owned by later parts (receipt batches, control
 * events, status documents) are defined next to their logic with `defineMessage`.
 */

export { FRAME_MAX_UNITS, UNIT_MAX_BYTES };
export { unitFrameSchema, unitSchema, type WireUnit, type WireUnitFrame };

/** Largest credit / credit-request encoding accepted (four identifiers of <= 128 chars, a few integers). */
export const CREDIT_MAX_BYTES = 4 * 1024;

const isUint = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** `unitSchema` for certainly-valid bodies, without zod's per-field machinery (see MessageSpec.fastPath). */
function fastUnit(body: unknown): WireUnit | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { volume, lane, term, firstSeq, lastSeq, commitTs, payload, digest } = body as Record<string, unknown>;
  if (!isValidToken(volume) || !isValidToken(lane) || !isUint(term) || !isUint(firstSeq) || !isUint(lastSeq))
    return undefined;
  if (lastSeq < firstSeq || !Array.isArray(commitTs) || commitTs.length !== lastSeq - firstSeq + 1) return undefined;
  for (const ts of commitTs) if (typeof ts !== "number" || !Number.isFinite(ts) || ts < 0) return undefined;
  if (!(payload instanceof Uint8Array) || !(digest instanceof Uint8Array) || digest.byteLength !== 32) return undefined;
  return { volume, lane, term, firstSeq, lastSeq, commitTs: commitTs.slice(), payload, digest };
}

/** `unit` v1: a transport unit sent to a holder on `custody.v1.unit.<toHolder>.<volume>.<lane>`. */
export const unitSpec = defineMessage({
  kind: "unit",
  version: 1,
  schema: unitSchema,
  maxBytes: UNIT_MAX_BYTES,
  fastPath: fastUnit,
  fastDecode: fastDecodeUnit,
});

/** `unitFrameSchema` for certainly-valid frames without per-unit headers (the untraced hot path). */
function fastUnitFrame(body: unknown): WireUnitFrame | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { units, sentThrough, headers } = body as Record<string, unknown>;
  if (headers !== undefined || !Array.isArray(units) || !Array.isArray(sentThrough)) return undefined;
  if (units.length < 2 || units.length > FRAME_MAX_UNITS || sentThrough.length !== units.length) return undefined;
  let prev = -1;
  for (let i = 0; i < units.length; i++) {
    const st: unknown = sentThrough[i];
    if (!(units[i] instanceof Uint8Array) || !isUint(st) || st <= prev) return undefined;
    prev = st;
  }
  return { units: units.slice() as Uint8Array[], sentThrough: sentThrough.slice() as number[] };
}

/** `unit-frame` v1: two or more units on `custody.v1.unit.<toHolder>.<volume>.<lane>`. */
export const unitFrameSpec = defineMessage({
  kind: "unit-frame",
  version: 1,
  schema: unitFrameSchema,
  maxBytes: UNIT_MAX_BYTES,
  fastPath: fastUnitFrame,
  fastDecode: fastDecodeUnitFrame,
});

/**
 * A credit grant from `holder` to `sender` for one lane. `grantedThrough` is absolute within one
 * credit window: the total number of payload bytes the sender may have sent on this lane under
 * that window, so a lost or duplicated grant is harmless (the largest one seen wins). A window is
 * named by the holder's `incarnation` and a `window` number the holder raises whenever it starts
 * the sender over (the holder restarted, or the sender did: `session` names the sender session
 * the window belongs to; 0 before the holder has heard from the sender). `grantSeq` orders grants
 * within a window.
 */
export const creditSchema = z.object({
  holder: identifier,
  sender: identifier,
  volume: identifier,
  lane: identifier,
  incarnation: uint,
  session: uint,
  window: uint,
  grantedThrough: uint,
  grantSeq: uint,
});
/** A credit grant as decoded from the wire. */
export type WireCredit = z.infer<typeof creditSchema>;
/**
 * `credit` v2: sent by the holder on `custody.v1.credit.<holder>.<volume>.<lane>` (v2 added incarnation, session,
 * window).
 */
export const creditSpec = defineMessage({
  kind: "credit",
  version: 2,
  schema: creditSchema,
  maxBytes: CREDIT_MAX_BYTES,
});

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
export const creditRequestSpec = defineMessage({
  kind: "credit-request",
  version: 1,
  schema: creditRequestSchema,
  maxBytes: CREDIT_MAX_BYTES,
});
