/**
 * Public face of `actors/hop/`: one custody hop between a sender and its receivers, shared by the
 * volume writer (toward its first hops) and holders (toward their edges), so neither imports the
 * other. Per-edge obligations (what each receiver incarnation has receipted), gap repair and the
 * send log behind it, release frontiers believed only as far as the control log backs them, and
 * the peer directory with the incarnation belief both sides check credit grants against.
 */
export {
  dueResends,
  forgetReceipted,
  noteResent,
  noteSent,
  receiverReset,
  type DownstreamLane,
  type DueResend,
} from "./edge-repair.ts";
export { SendLog } from "./send-log.ts";
export { EdgeReceiptError, EdgeReceiptErrorCode, LaneObligations, type EdgeReceipt } from "./lane-obligations.ts";
export { FrontierBacking } from "./frontier-backing.ts";
export type { PeerDirectory } from "./peer-directory.ts";
export { believesIncarnation, edgeGrantChecks } from "./admitted-incarnation.ts";
export * from "./credit-window.ts";
export * from "./credit-sender.ts";
export * from "./credit-grantor.ts";
export * from "./credit-grantor-state.ts";
export {
  coveredByAllEdges,
  edgeCovered,
  edgePending,
  ledgerApplyReceipt,
  ledgerReleasedAtEdge,
  ledgerRestartEdge,
  openEdgeLedger,
  type EdgeLedger,
  type EdgeMark,
} from "./edge-ledger.ts";
export {
  dueInRecord,
  forgetInRecord,
  MAX_RESEND_BACKOFF,
  nextResendBackoff,
  recordSend,
  type SendRecord,
} from "./send-record.ts";
