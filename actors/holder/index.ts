/**
 * Public face of `actors/holder/` for the other actor sub-folders. The sending side of a custody
 * hop lives here and the volume writer reuses it toward its first hops: gap repair toward
 * receivers, what each receiver has receipted, and release frontiers believed only as far as the
 * control log backs them; plus the peer directory port both read.
 */
export { dueResends, forgetReceipted, noteResent, noteSent, receiverReset, type DownstreamLane, type DueResend } from "./edge-repair.ts";
export { LaneObligations } from "./lane-obligations.ts";
export { FrontierBacking } from "./frontier-backing.ts";
export type { PeerDirectory } from "./holder-ports.ts";
export { believesIncarnation } from "./admitted-incarnation.ts";
