/** Size limits of the unit kinds, apart from their schemas so the hand-written codecs can use them too. */

/**
 * Largest transport-unit encoding accepted. NATS' default max_payload is 1 MiB: servers that carry bigger units must
 * raise it.
 */
export const UNIT_MAX_BYTES = 8 * 1024 * 1024;

/** Most units one frame may carry. */
export const FRAME_MAX_UNITS = 4096;
