import { z } from "zod";
import { tokenProblem } from "../subjects.ts";

/**
 * Field schemas shared by message kinds, so every kind validates identifiers, sequence numbers
 * and byte strings the same way.
 */

/** A holder/volume/lane/region identifier: a valid subject token (see `transport/protocol/subjects.ts`). */
export const identifier = z.string().superRefine((value, ctx) => {
  const reason = tokenProblem(value);
  if (reason !== undefined) ctx.addIssue({ code: "custom", message: `not a valid identifier: ${reason}` });
});

/** A non-negative safe integer: sequence numbers, terms, epochs, byte counts. */
export const uint = z.number().int().nonnegative();

/**
 * Up to `max` sequence ranges `[first, last]`, each with first <= last. An inverted range is an
 * invalid field on the wire (a typed decode error every receiver counts), never left for a receiver's
 * range arithmetic to throw on after some of the message was acted on.
 */
export function seqRanges(max: number) {
  return z
    .array(
      z
        .tuple([uint, uint])
        .refine(([first, last]) => first <= last, { message: "a range's first sequence exceeds its last" }),
    )
    .max(max);
}

/** Milliseconds since the Unix epoch; finite and non-negative (fractions allowed for simulated clocks). */
export const timestampMs = z.number().nonnegative();

/**
 * Raw bytes, carried as msgpack bin (a `Uint8Array`, never base64). Typed as plain `Uint8Array`
 * (any backing buffer), not `z.instanceof`'s `Uint8Array<ArrayBuffer>`, so views and Buffers from
 * other modules type-check as bodies.
 */
export const bytes = z.custom<Uint8Array>((value) => value instanceof Uint8Array, {
  message: "expected bytes (msgpack bin)",
});

/** Raw bytes of exactly `length` bytes (e.g. a SHA-256 digest: 32). */
export function fixedBytes(length: number) {
  return bytes.refine((b) => b.byteLength === length, { message: `must be exactly ${length} bytes` });
}
