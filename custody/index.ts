/**
 * Public surface of the custody vocabulary: receipts and their evidence, canonical signed receipt
 * batches and their verification, the receipt ledger, and the fenced, hash-chained control log.
 * Everything here is pure or goes through a seam (Clock, ControlLogStore); the JetStream store
 * lives in `transport/jetstream-control-log.ts`.
 */
export { tokenSchema, uintSchema } from "./token.ts";
export {
  EvidenceKind,
  isKnownEvidenceKind,
  survivesPowerLoss,
  type DiskEvidence,
  type ProtectedRamEvidence,
  type RamEvidence,
  type ResidencyClaim,
  type ResidencyEvidence,
  type UnrecognizedEvidence,
} from "./evidence.ts";
export {
  PayloadRepresentation,
  type BaseSnapshotRef,
  type CoalescedPayload,
  type ConsistencyCut,
  type PayloadDescription,
  type RawPayload,
  type SourceCutManifest,
} from "./source-cut.ts";
export {
  CURRENT_RECEIPT_VERSION,
  KNOWN_EXTENSION_KINDS,
  ReceiptVersion,
  ReleaseAuthorityKind,
  makeReceipt,
  receiptToTuple,
  type CustodyReceipt,
  type HolderIdentity,
  type ReceiptExtension,
  type ReceiptFields,
  type ReleaseAuthority,
  type RetentionObligation,
} from "./receipt.ts";
export { ReceiptError, ReceiptErrorCode } from "./receipt-error.ts";
export {
  ED25519_PUBLIC_KEY_BYTES,
  ED25519_SIGNATURE_BYTES,
  InvalidKeyError,
  generateHolderKeyPair,
  privateKeyFromPkcs8,
  publicKeyFromRaw,
  rawPublicKey,
  signBytes,
  verifyBytes,
  type HolderKeyPair,
} from "./signing.ts";
export {
  MAX_RECEIPTS_PER_BATCH,
  decodeReceiptBatch,
  encodeReceiptBatch,
  makeReceiptBatch,
  receiptBatchSender,
  receiptStream,
  signReceiptBatch,
  type ReceiptBatch,
  type ReceiptStream,
  type SignedReceiptBatch,
} from "./receipt-batch.ts";
export { verifyReceiptBatch, type ReceiptVerifyContext } from "./receipt-verification.ts";
export {
  ReceiptLedger,
  holdingOf,
  type CoverageQuery,
  type Holding,
  type HoldingFilter,
  type LedgerApplyResult,
  type LedgerSnapshot,
  type ReceiptLedgerOptions,
} from "./receipt-ledger.ts";
export {
  ControlConflictError,
  ControlFenceCode,
  ControlFenceError,
  ControlLogRegressionCode,
  ControlLogRegressionError,
} from "./control-error.ts";
export {
  ControlEventType,
  ControlEventVersion,
  PersistenceChoiceVersion,
  LeaseBodyVersion,
  AdmissionBodyVersion,
  FailureScope,
  GENESIS_HASH,
  decodeControlEvent,
  encodeControlEvent,
  encodeAppendableControlEvent,
  hashControlEvent,
  hashControlEventBytes,
  type ControlEvent,
  type ControlEventBody,
  type ControlEventHeader,
  type ControlEventOf,
} from "./control-event.ts";
export {
  HolderStatus,
  INITIAL_CONTROL_STATE,
  OPEN_END,
  applyControlEvent,
  foldControlEntry,
  foldControlLog,
  isReleaseAuthorized,
  receiptVerifyContext,
  releaseFrontiers,
  releasedRanges,
  isReadableEntry,
  type ControlLogEntry,
  type ControlLogRecord,
  type UnreadableControlEntry,
  type ControlState,
  type HolderRecord,
  type ObligationRecord,
  type TransferRecord,
} from "./control-state.ts";
export { commitFailover as foldFailover, type FailoverRecord, type Failovers } from "./control-failover.ts";
export {
  InMemoryControlLog,
  entryFromBytes,
  recordFromBytes,
  snapshotRecordOf,
  unreadableRecord,
  type ControlLogStore,
} from "./control-log.ts";
export {
  ControlSnapshotVersion,
  CONTROL_SNAPSHOT_MAX_BYTES,
  decodeControlSnapshot,
  decodeControlState,
  encodeControlSnapshot,
  encodeControlState,
  foldSnapshotRecord,
  hashControlState,
  isSnapshotRecord,
  snapshotRecordFromBytes,
  snapshotSignatureProblem,
  type ControlSnapshot,
  type ControlSnapshotRecord,
} from "./control-snapshot.ts";
export { ControlLogCompactor, ControlLogNotCompactableError, type CompactionResult } from "./control-compaction.ts";
export { ControlLogFollower } from "./control-log-follower.ts";
export { commitControlEvent, type ControllerIdentity } from "./control-commit.ts";
export {
  authorityScope,
  eventScope,
  holderScope,
  isHolderBound,
  volumeScopeProblem,
  type VolumeScope,
} from "./control-scope.ts";
export { leaseOf, type ControlLease, type ControlLeases } from "./control-lease.ts";
export {
  signEntryHash,
  signatureProblem,
  type ControlTrust,
  type ControlSigner,
  type EntrySignature,
} from "./control-trust.ts";
export {
  CONTROL_EVENT_MAX_BYTES,
  RECEIPT_BATCH_MAX_BYTES,
  controlEventSchema,
  controlEventSpec,
  controlSnapshotSchema,
  controlSnapshotSpec,
  receiptBatchSchema,
  receiptBatchSpec,
} from "./custody-messages.ts";
export { KeyAuthority, KeyAccessDeniedError, KeyAuthorityUnavailableError, DATA_KEY_BYTES } from "./key-authority.ts";
export { failureDomainOf, inFailureDomain } from "./failure-domain.ts";
export { checkAutoAdmission, MAX_AUTO_INCARNATION_LEAP } from "./admission.ts";
export {
  AdmissionError,
  AdmissionRefusal,
  encodeAdmissionRequest,
  readAdmissionRequest,
  type AdmissionRequest,
} from "./admission-request.ts";
export { commitControlEventRetrying } from "./control-commit.ts";
export { HoldKind } from "./control-event.ts";
export { overdueHolds, overdueReason, type Holds } from "./control-holds.ts";
export {
  flushableAt,
  persistenceChoiceOf,
  type PersistenceChoice,
  type PersistenceChoices,
} from "./control-persistence.ts";
export { ControlLogPeers } from "./control-peers.ts";
export {
  MAX_ATTESTED_UNITS,
  UnitAuthCode,
  UnitAuthError,
  attests,
  readUnitAttestation,
  signUnitAttestation,
  verifyUnitAttestation,
  type UnitAttestation,
  type UnitClaim,
} from "./unit-attestation.ts";
export { UnitAuthenticator, WriterKeyring, type AttestedUnit, type UnitAuthVerdict } from "./unit-authenticator.ts";
export { writerSigningKey, writerUnitSigner } from "./unit-signer.ts";
