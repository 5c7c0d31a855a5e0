/** Public surface of the wire codec: envelope codec, registry, errors, features and message kinds. */
export {
  DEFAULT_MAX_BYTES,
  decodeAny,
  decodeMessage,
  defineMessage,
  encodeMessage,
  registeredKinds,
  specFor,
  type MessageSpec,
} from "./codec.ts";
export { WireError, WireErrorCode, isWireError } from "./wire-error.ts";
export { defineFeature, isKnownFeature, knownFeatures } from "./features.ts";
/** Shared field schemas (identifier, uint, timestampMs, bytes, fixedBytes) for kinds defined elsewhere. */
export * as wireFields from "./fields.ts";
export {
  CREDIT_MAX_BYTES,
  FRAME_MAX_UNITS,
  UNIT_MAX_BYTES,
  creditRequestSchema,
  creditRequestSpec,
  creditSchema,
  creditSpec,
  unitSchema,
  unitSpec,
  unitFrameSchema,
  unitFrameSpec,
  type WireCredit,
  type WireUnitFrame,
  type WireCreditRequest,
  type WireUnit,
} from "./messages.ts";
