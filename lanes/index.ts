/** Public surface of `lanes/`: sequence range sets, transport units, per-lane acceptance state. */
export { RangeSet, InvalidRangeError, type SeqRange } from "./range-set.ts";
export {
  type TransportUnit,
  type UnitFields,
  UNIT_DIGEST_BYTES,
  InvalidUnitError,
  UnitDigestError,
  checkIdentifier,
  unitDigest,
  makeTransportUnit,
  validateTransportUnit,
  laneKey,
} from "./transport-unit.ts";
export {
  LaneLog,
  UnitVerdict,
  StaleTermError,
  OverlappingUnitError,
  WrongLaneError,
  type LaneProgress,
} from "./lane-log.ts";
export { GrowingRangeSet } from "./growing-range-set.ts";
