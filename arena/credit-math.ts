/**
 * Ingress credit arithmetic, pure. Units never span segments and a segment closes only when the
 * next unit does not fit, so every closed segment holds at least `S - m + 1` unit bytes (segment
 * size S, largest unit m <= S/2). That bounds the fresh segments a lane may still need for the
 * credits it has been granted but not used. The arena grants only what those bounds let it land in
 * segments it already has (admitted capacity), so a credited unit is never refused for lack of space.
 */

/** Sizes the bounds depend on. */
export interface CreditGeometry {
  readonly segmentBytes: number;
  readonly maxUnitBytes: number;
}

/** Worst-case unit bytes one fresh segment is guaranteed to absorb before it must close. */
export function guaranteedPerSegment(g: CreditGeometry): number {
  return g.segmentBytes - g.maxUnitBytes + 1;
}

/**
 * Fresh segments a lane may need to land `outstanding` credited bytes, given `openRemaining`
 * free bytes in its open segment (0 when it has none). Never underestimates.
 */
export function segmentsNeeded(g: CreditGeometry, outstanding: number, openRemaining: number): number {
  if (outstanding <= openRemaining) return 0;
  // The open segment closes only once fewer than m bytes remain in it.
  const inOpen = Math.max(0, openRemaining - g.maxUnitBytes + 1);
  return Math.ceil((outstanding - inOpen) / guaranteedPerSegment(g));
}

/**
 * Largest outstanding credit a lane may hold when at most `segments` fresh segments can be set
 * aside for it (the inverse of `segmentsNeeded`). Negative `segments` means none at all.
 */
export function maxOutstanding(g: CreditGeometry, segments: number, openRemaining: number): number {
  if (segments <= 0) return openRemaining;
  const inOpen = Math.max(0, openRemaining - g.maxUnitBytes + 1);
  return Math.max(openRemaining, inOpen + segments * guaranteedPerSegment(g));
}
