import type { DrainCapacities, ProtectedRamNode } from "../../policies/index.ts";

/**
 * The drain layout of a volume's protected-RAM holders, as the controller is told it: per holder,
 * the `custody admit` node description without its queue (the controller measures that from
 * receipts), and the capacities of shared drain targets and links.
 */
export interface ProtectedRamLayout {
  readonly nodes: Readonly<Record<string, Omit<ProtectedRamNode, "id" | "queuedProtectedBytes">>>;
  readonly capacities?: Partial<DrainCapacities>;
}
