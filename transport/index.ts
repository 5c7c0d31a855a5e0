// Public surface of transport/. Other folders import from here, never from the NATS client.
export * from "./transport.ts";
export * from "./transport-decorator.ts";
export * from "./transport-error.ts";
export * from "./nats-connection.ts";
export * from "./nats-connect-error.ts";
export * from "./nats-transport.ts";
export * from "./trace-context.ts";
export {
  ControlLogMissingError,
  ControlLogPlacementError,
  JetStreamControlLog,
  controlStreamName,
  initJetStreamControlLog,
  openJetStreamControlLog,
} from "./jetstream-control-log.ts";
export { isControlLogUnavailable, retryWhileUnavailable } from "./control-log-unavailable.ts";
export { ControlLogUnreachableError } from "./control-log-unreachable.ts";
export { streamAdvisorySubject } from "./control-log-tail.ts";
export {
  LinkProfileError,
  LinkQueue,
  ShapedTransport,
  unitDestination,
  type LinkProfile,
  type LinkRoute,
  type ShapedTransportOptions,
} from "./link-shaper.ts";
export {
  controlClusterServerConfig,
  LOOPBACK,
  regionConfig,
  type ControlClusterPorts,
  type RegionPorts,
  type RegionSecurityBlocks,
} from "./nats-region-config.ts";
export {
  attestationTokens,
  CREDIT_WINDOW_HEADER,
  creditWindowTag,
  encodeUnitRun,
  readUnitMessage,
  senderOf,
  SENDER_HEADER,
  SENT_THROUGH_HEADER,
  SESSION_HEADER,
  UNIT_ATTESTATION_HEADER,
  type InboundUnit,
  type UnitSubjectMessage,
} from "./unit-frames.ts";
