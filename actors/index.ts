/** Public surface of `actors/` (each machine's module adds its own line). */
export {
  laneArenaMachine,
  type LaneArenaInput,
  type LaneArenaContext,
  type LaneArenaEvent,
  type LaneArenaEmitted,
  type LaneSummary,
} from "./lane-arena.machine.ts";
export { holderMachine, HolderState, type HolderMachineInput, type HolderContext, type HolderCommand, type HolderEvent } from "./holder.machine.ts";
export { startHolder, HolderStartError, type Holder } from "./holder.ts";
export { parseHolderConfig, HolderConfigError, HolderResidency, type HolderConfig, type HolderConfigInput, type LaneConfig, type ProtectedRamEvidence } from "./holder/holder-config.ts";
export { HolderRejectCode, type HolderObservation, type HolderPorts, type PeerDirectory } from "./holder/holder-core.ts";
export { releaseFrontierSpec, transferOfferSpec, holderEventSpec, signedReceiptBatchSpec, HolderEventKind } from "./holder/holder-messages.ts";
