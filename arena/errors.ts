import { CustodyError } from "../core/index.ts";

/** Thrown for an arena configuration that cannot work (sizes not multiples, unit cap too large). */
export class InvalidArenaConfigError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_arena_config", message, detail);
  }
}

/**
 * Thrown for a unit whose stored record (digest + commit timestamps + payload) exceeds the arena's
 * `maxUnitBytes`. Units never span segments; senders split larger runs into several units.
 */
export class UnitTooLargeError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("unit_too_large", "unit is larger than the arena accepts; split it into smaller units", detail);
  }
}

/** Thrown for a unit that arrives without enough granted, unused credits on its lane. */
export class CreditExceededError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("credit_exceeded", "unit exceeds the lane's outstanding ingress credits", detail);
  }
}

/** Thrown when no segment slot is free. For credited units this is a bug the credit math rules out. */
export class ArenaFullError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("arena_full", "no free segment in the arena", detail);
  }
}

/** Thrown when capacity growth would pass the hard byte limit. */
export class CapacityLimitError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("capacity_limit", "arena is at its hard byte limit", detail);
  }
}

/** Thrown for an unknown segment id (never existed, or already recycled). */
export class UnknownSegmentError extends CustodyError {
  constructor(segmentId: number) {
    super("unknown_segment", "no such segment in the arena", { segmentId });
  }
}

/** Thrown for an operation the segment's state forbids (unpin without pin, export of a spilled segment...). */
export class SegmentStateError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("segment_state", message, detail);
  }
}

/** Thrown for an unknown pin reason. */
export class InvalidPinReasonError extends CustodyError {
  constructor(reason: unknown) {
    super("invalid_pin_reason", "unknown pin reason", { reason });
  }
}

/** Thrown when exported segment bytes fail validation (magic, version, lengths, checksum). */
export class SegmentFormatError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super("segment_format", message, detail);
  }
}

/** Thrown for a malformed request (negative credit amount, bad identifier, bad range). */
export class InvalidArenaRequestError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_request", message, detail);
  }
}
