/**
 * The shapes of what the operator reads over NATS: a holder's stats and a volume's controller
 * view. Their own file so operator-view.ts (which reads them) and settle.ts (which judges them)
 * need not import each other.
 */
import type { VolumeStatus } from "../../transport/protocol/index.ts";

/** What a holder process's stats say (see operator-view.ts). */
export interface HolderStats {
  /** Volume → retained sequences, their payload bytes and the highest sequence it retained or released (0: none). */
  readonly volumes: Record<string, { retained: [number, number][]; bytes: number; reach?: number }>;
  /** Units held back on its shaped links (sent, not yet delivered). */
  readonly inFlight: number;
  /** [first, last, wall ms] of each first-volume admission (from its span file, once the run is over). */
  readonly captured: [number, number, number][];
}

/** A volume's controller as its stats and status documents show it. */
export interface ControllerView {
  readonly status: VolumeStatus | null;
  /** Holder → sequences its verified receipts show it retaining. */
  readonly receipted: Record<string, [number, number][]>;
}
