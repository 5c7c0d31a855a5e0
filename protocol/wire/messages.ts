import { z } from "zod";
import { defineMessage } from "./codec.ts";
import { bytes, fixedBytes, identifier, timestampMs, uint } from "./fields.ts";
import { isValidToken } from "../subjects.ts";
import { FRAME_MAX_UNITS, UNIT_MAX_BYTES } from "./limits.ts";
import { fastDecodeUnit } from "./unit-fast-decode.ts";
import { fastDecodeUnitFrame } from "./unit-frame-codec.ts";

/**
 * The message kinds of the lane data path. Each has one zod schema (the runtime validator) and
 * the TypeScript type inferred from it. Kinds owned by later parts (receipt batches, control
 * events, status documents) are defined next to their logic with `defineMessage`.
 */

export { FRAME_MAX_UNITS, UNIT_MAX_BYTES };

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
      ctx.addIssue({
        code: "custom",
        path: ["lastSeq"],
        message: `lastSeq ${u.lastSeq} is below firstSeq ${u.firstSeq}`,
      });
    } else if (u.commitTs.length !== u.lastSeq - u.firstSeq + 1) {
      ctx.addIssue({
        code: "custom",
        path: ["commitTs"],
        message: `needs one timestamp per record (${u.lastSeq - u.firstSeq + 1}), got ${u.commitTs.length}`,
      });
    }
  });
/** A transport unit as decoded from the wire (structurally the lanes' `TransportUnit`). */
export type WireUnit = z.infer<typeof unitSchema>;

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

/** Per-unit message headers inside a frame (trace context): at most 8 short string pairs. */
const unitHeaders = z
  .record(z.string().max(64), z.string().max(1024))
  .refine((h) => Object.keys(h).length <= 8, { message: "at most 8 headers per unit" });

/**
 * A frame: several complete transport units for one lane, sent as one message when a sender has
 * more than one unit ready at once (credits permitting). Each `units[i]` is the full encoding of a
 * `unit` v1 message, so a holder verifies, stores and forwards every unit on its own, byte for
 * byte. `sentThrough[i]` is the sender's cumulative credited bytes through unit i (strictly
 * increasing); `headers[i]`, when present, carries that unit's own trace context.
 */
export const unitFrameSchema = z
  .object({
    units: z.array(bytes).min(2).max(FRAME_MAX_UNITS),
    sentThrough: z.array(uint),
    headers: z.array(unitHeaders).optional(),
  })
  .superRefine((f, ctx) => {
    if (f.sentThrough.length !== f.units.length) {
      ctx.addIssue({
        code: "custom",
        path: ["sentThrough"],
        message: `needs one figure per unit (${f.units.length}), got ${f.sentThrough.length}`,
      });
      return;
    }
    for (let i = 1; i < f.sentThrough.length; i++) {
      if (f.sentThrough[i]! <= f.sentThrough[i - 1]!) {
        ctx.addIssue({ code: "custom", path: ["sentThrough", i], message: "must increase strictly" });
        return;
      }
    }
    if (f.headers !== undefined && f.headers.length !== f.units.length) {
      ctx.addIssue({
        code: "custom",
        path: ["headers"],
        message: `needs one record per unit (${f.units.length}), got ${f.headers.length}`,
      });
    }
  });
/** A frame as decoded from the wire. */
export type WireUnitFrame = z.infer<typeof unitFrameSchema>;

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
