import { z } from "zod";
import { bytes, fixedBytes, identifier, timestampMs, uint } from "./fields.ts";
import { FRAME_MAX_UNITS } from "./limits.ts";

/**
 * The schemas and types of the `unit` and `unit-frame` kinds, apart from their message specs in
 * messages.ts: the fast decoders the specs use produce these types.
 */

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
