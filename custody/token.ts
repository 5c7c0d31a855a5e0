import { identifier, uint } from "../transport/protocol/index.ts";

/**
 * A name that may appear as one NATS subject token (holder ids, volumes, lanes, regions,
 * obligation ids). Same rule as every wire identifier (`transport/protocol/subjects.ts`).
 */
export const tokenSchema = identifier;

/** A non-negative safe integer (sequence numbers, epochs, generations, millisecond times). */
export const uintSchema = uint.max(Number.MAX_SAFE_INTEGER);
