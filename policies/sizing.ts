import { PolicyInputError } from "./policy-errors.ts";

/** Binary and decimal units, in bytes. Transfer prices are per decimal GB. */
export const Bytes = {
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  TiB: 1024 ** 4,
  GB: 1e9,
} as const;

/** Inputs of the memory a holder needs for one stream. */
export interface MemorySizingInput {
  readonly retainedBytesPerSec: number;
  readonly retentionSec: number;
  readonly burstBytes?: number | undefined;
  readonly pinnedBytes?: number | undefined;
  readonly creditBytes?: number | undefined;
  /** A forwarding outage of this length piles its whole arrival up as backlog. */
  readonly forwardingOutageSec?: number | undefined;
}

/** The breakdown of a memory estimate, in bytes, before headroom. */
export interface MemorySizing {
  readonly steadyBytes: number;
  readonly outageBacklogBytes: number;
  readonly burstBytes: number;
  readonly pinnedBytes: number;
  readonly creditBytes: number;
  readonly totalBytes: number;
}

function nonNegative(v: number, field: string): number {
  if (!Number.isFinite(v) || v < 0) throw new PolicyInputError(field, `must be a finite number >= 0, got ${v}`);
  return v;
}

/**
 * memory = retained byte rate × (retention + forwarding outage) + bursts + pins + credits.
 * Throws PolicyInputError for a negative or non-finite input.
 */
export function memoryNeeded(input: MemorySizingInput): MemorySizing {
  const rate = nonNegative(input.retainedBytesPerSec, "retainedBytesPerSec");
  const steadyBytes = rate * nonNegative(input.retentionSec, "retentionSec");
  const outageBacklogBytes = rate * nonNegative(input.forwardingOutageSec ?? 0, "forwardingOutageSec");
  const burstBytes = nonNegative(input.burstBytes ?? 0, "burstBytes");
  const pinnedBytes = nonNegative(input.pinnedBytes ?? 0, "pinnedBytes");
  const creditBytes = nonNegative(input.creditBytes ?? 0, "creditBytes");
  return {
    steadyBytes,
    outageBacklogBytes,
    burstBytes,
    pinnedBytes,
    creditBytes,
    totalBytes: steadyBytes + outageBacklogBytes + burstBytes + pinnedBytes + creditBytes,
  };
}
