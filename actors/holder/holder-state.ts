import type { HolderConfig, ProtectedRamEvidence } from "./holder-config.ts";
import { laneKey } from "./holder-config.ts";

/**
 * The holder machine's own data: plain values only (no class instance, no closure), changed by the
 * pure steps of holder-step.ts and assigned by the machine. What is not here yet (lane arenas,
 * obligations, credit windows, send logs, spill driver) still lives in HolderCore behind the
 * machine's executor (holder-executor.ts).
 */

/** The base snapshot a lane's receipts name (announced by the base builder beside the holder). */
export interface BaseSnapshotRef {
  readonly snapshotId: string;
  readonly throughSeq: number;
  readonly bytes: number;
}

/** One lane as the pure steps see it: who it forwards to, and the base its receipts name. */
export interface HolderLaneTopology {
  readonly volume: string;
  readonly lane: string;
  readonly edges: readonly string[];
  readonly base?: BaseSnapshotRef;
}

/** A span a receipt links to: the admit span of a unit it covers (a span context as plain fields). */
export interface ReceiptLink {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly isRemote?: boolean;
}

/** Units admitted on a lane since its last receipt, and since when. */
export interface OpenReceiptBatch {
  readonly units: number;
  readonly openedAt: number;
  readonly links: readonly ReceiptLink[];
}

/** Per-lane receipt batches, and whether a `timer.receipts` is pending (one at a time). */
export interface ReceiptBatches {
  readonly open: Readonly<Record<string, OpenReceiptBatch>>;
  readonly armed: boolean;
}

export interface HolderPlainState {
  /** The validated configuration (zod output: plain data). */
  readonly config: HolderConfig;
  /** Lanes served, by lane key (configured ones, and those a transfer brought). */
  readonly lanes: Readonly<Record<string, HolderLaneTopology>>;
  readonly receipts: ReceiptBatches;
  /** The host's latest protected-RAM evidence (undefined without protected-RAM configuration). */
  readonly evidence: ProtectedRamEvidence | undefined;
  /** How often retained coverage is re-announced and unreceipted units re-sent (`timer.refresh`). */
  readonly refreshMs: number;
  /**
   * True while protected-RAM custody is being evacuated: from entering degraded_evidence until the
   * hold-up time ends (`timer.evacuation`), whatever state the holder is in by then.
   */
  readonly evacuating: boolean;
  /**
   * True while some lane retains custody, as the lane runtime reported it at the end of the last
   * event it handled (a draining holder retires once it is false).
   */
  readonly retainsCustody: boolean;
  /** True while credit is promised to upstream senders (serving, degraded); false from draining on. */
  readonly granting: boolean;
}

export const NO_RECEIPT_BATCHES: ReceiptBatches = { open: {}, armed: false };

/** The default `refreshMs` (HolderPorts.receiptRefreshMs). */
export const DEFAULT_RECEIPT_REFRESH_MS = 500;

export function initialHolderState(config: HolderConfig, refreshMs = DEFAULT_RECEIPT_REFRESH_MS): HolderPlainState {
  const lanes: Record<string, HolderLaneTopology> = {};
  for (const l of config.lanes)
    lanes[laneKey(l.volume, l.lane)] = { volume: l.volume, lane: l.lane, edges: l.downstream };
  return {
    config,
    lanes,
    receipts: NO_RECEIPT_BATCHES,
    evidence: config.protectedRam?.evidence,
    refreshMs,
    evacuating: false,
    retainsCustody: false,
    granting: true,
  };
}
