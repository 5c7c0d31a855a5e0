/**
 * Public surface of `transport/protocol/`: the subject scheme and the versioned wire kinds (codec, field
 * schemas, decoder bounds) — what custody/ and transport/ both speak, without any connection code.
 */
export { probeDestination, probeSubject, routeSubject } from "./subjects.ts";
export {
  PROBE_FRAME_MAX_BYTES,
  ProbePhase,
  ROUTES_MAX,
  RouteSenderMismatchError,
  decodeRouteMeasurements,
  routeMeasurementsSpec,
  routeProbeSpec,
  type RouteMeasurements,
  type RouteProbe,
} from "./route-messages.ts";
export {
  admitSubject,
  allOfKind,
  baseSubject,
  checkToken,
  creditSubject,
  ctrlSubject,
  eventSubject,
  fetchSubject,
  fetchesToHolder,
  parseSubject,
  parseSubjectOf,
  psSubject,
  receiptSubject,
  receiptsOfVolume,
  releaseSubject,
  statusSubject,
  subjectFilter,
  transferSubject,
  unitSubject,
} from "./subjects.ts";
export { auditSubject } from "./subjects.ts";
export {
  DEFAULT_MAX_BYTES,
  decodeAny,
  decodeMessage,
  defineMessage,
  encodeMessage,
  registeredKinds,
  specFor,
  type MessageSpec,
} from "./wire/codec.ts";
export { bytes, fixedBytes, identifier, timestampMs, uint } from "./wire/fields.ts";
export { wireFields } from "./wire/index.ts";
export { UNIT_MAX_BYTES } from "./wire/limits.ts";
export {
  creditRequestSpec,
  creditSpec,
  unitFrameSpec,
  unitSpec,
  type WireCredit,
  type WireUnit,
  type WireUnitFrame,
} from "./wire/messages.ts";
export { decodeBounded } from "./wire/msgpack-bounds.ts";
export { fastDecodeUnit } from "./wire/unit-fast-decode.ts";
export { after as msgpackHeadEnd, BIN, bytesAt, fixstr, readLengthHeader, STR } from "./wire/msgpack-heads.ts";
export { fastDecodeUnitFrame, writeUnitFrame } from "./wire/unit-frame-codec.ts";
export { WireError, WireErrorCode } from "./wire/wire-error.ts";
export {
  repairActivateSpec,
  repairAdmitSpec,
  repairAnswerSpec,
  repairOutcomeSpec,
  repairProtectSpec,
  repairTaskSpec,
  repairUnprotectSpec,
  repairViewRequestSpec,
  repairViewSpec,
  type WireRepairAnswer,
  type WireRepairOutcome,
  type WireRepairTask,
  type WireRepairView,
} from "./wire/repair-messages.ts";
export { RepairOp, repairSubject, repairRequestsOfVolume, repairTaskSubject } from "./subjects.ts";
export { failoverSubject } from "./subjects.ts";
export {
  failoverAnswerSpec,
  failoverRequestSpec,
  type WireFailoverAnswer,
  type WireFailoverRequest,
} from "./wire/failover-messages.ts";
export { replicaCatchupRequestsOfVolume, replicaCatchupSubject } from "./subjects.ts";
export {
  replicaCatchupBeginSpec,
  replicaCatchupChunkSpec,
  replicaCatchupNextSpec,
  replicaCatchupPlanSpec,
  replicaCatchupRefusedSpec,
  type WireCatchupPlan,
} from "./wire/replica-catchup-messages.ts";
export {
  HolderEventKind,
  baseReadySpec,
  decodeTransferOffer,
  encodeTransferOffer,
  holderEventSpec,
  releaseFrontierSpec,
  transferOfferSpec,
  transferOfferV2Spec,
  type ReadTransferOffer,
  type BaseReadyMessage,
  type HolderEventMessage,
  type ReleaseFrontierMessage,
  type TransferOfferMessage,
} from "./wire/holder-messages.ts";
export { writerProgressSpec, type WriterProgressMessage } from "./wire/writer-messages.ts";
export {
  retentionAnswerSpec,
  retentionChallengeSpec,
  type RetentionAnswer,
  type RetentionChallenge,
} from "./wire/audit-messages.ts";
export {
  PayloadDecryptError,
  decodeRecords,
  encodeRecords,
  openCoalescedPayload,
  openPayload,
  sealPayload,
  type PayloadIdentity,
  type WriteRecord,
} from "./wire/unit-payload.ts";
export {
  RepairStatusState,
  volumeStatusSpec,
  type AuditStatus,
  type FencedStatus,
  type RepairStatus,
  type SpendStatus,
  type VolumeStatus,
} from "./wire/volume-status.ts";
export {
  DEFAULT_FETCH_PAGE_BYTES,
  encodeFetchPage,
  fetchPageBytes,
  unitBatchSpec,
  unitFetchSpec,
} from "./wire/unit-fetch.ts";
export { obligationIdOf } from "./obligation-id.ts";
export { MANIFEST_MAX_LANES, laneManifestSpec, type LaneManifestMessage } from "./wire/manifest-messages.ts";
