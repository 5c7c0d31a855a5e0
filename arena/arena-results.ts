/** Result of `Arena.append`. */
export interface AppendResult {
  readonly segmentId: number;
  readonly index: number;
  /** True when the unit opened a new segment (the caller starts its max-open-delay timer). */
  readonly opened: boolean;
  /** The lane's previous segment, sealed because the unit did not fit in it. */
  readonly sealedFull: number | undefined;
}

/** Result of `Arena.seal`. */
export interface SealResult {
  readonly segmentId: number | undefined;
  /** Sealing now would strand space that granted credits rely on; the segment stays open. */
  readonly deferred: boolean;
}
