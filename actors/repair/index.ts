/**
 * Public face of `actors/repair/` for the other actor sub-folders: the port a repair runs against
 * (the controller implements it in process), the steps and wire conversions the controller shares
 * with repair tasks, copying over NATS, and reads of retained units (fetch, recovery) that the
 * controller's audits and the base builder use too.
 */
export type { RepairPort, RepairPorts, RepairView, ReplacementAdmission } from "./repair-port.ts";
export { missingCoverage } from "./repair-plan.ts";
export type { RepairInput } from "./repair-steps.ts";
export { repairSettingsOf, type RepairSettings } from "./repair-state.ts";
export { ControllerRefusedError, outcomeFromWire, viewToWire } from "./repair-wire.ts";
export { copyOverNats, type CopySource } from "./copy-over-nats.ts";
export { fetchUnits } from "./custody-reader.ts";
export { applyRecords, contiguousFrom, copyBlocks, openUnits } from "./volume-recovery.ts";
export { repairMachine, RepairState, type RepairOutcome, type RepairReport } from "./repair.machine.ts";
export { reportOf } from "./repair.ts";
export { repairMachineFor } from "./repair-executors.ts";
