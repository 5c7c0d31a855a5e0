/** Public surface of `arena/`: segment pool, pins, credits accounting, spill stream, segment transfer form. */
export { Arena, type AppendResult, type SealResult, type ArenaReport } from "./arena.ts";
export { type ArenaConfig, DEFAULT_ARENA_CONFIG, resolveArenaConfig } from "./arena-config.ts";
export { type CreditGeometry, guaranteedPerSegment, segmentsNeeded, maxOutstanding } from "./credit-math.ts";
export {
  InvalidArenaConfigError,
  InvalidArenaRequestError,
  UnitTooLargeError,
  CreditExceededError,
  ArenaFullError,
  CapacityLimitError,
  UnknownSegmentError,
  SegmentStateError,
  InvalidPinReasonError,
  SegmentFormatError,
} from "./errors.ts";
export { PinReason, PIN_REASONS } from "./pin-reason.ts";
export { Residency, type SegmentResidency } from "../core/index.ts";
export { Segment, SegmentState, unitRecordBytes } from "./segment.ts";
export {
  encodeSegment,
  decodeSegment,
  type DecodedSegment,
  SEGMENT_ATTESTED_VERSION,
  SEGMENT_FORMAT_VERSION,
} from "./segment-codec.ts";
export {
  SpillStream,
  SpillRecordError,
  type SpillEvidence,
  type SpillRecordInfo,
  type FlushResult,
} from "./spill-stream.ts";
export { SpillSet } from "./spill-set.ts";
