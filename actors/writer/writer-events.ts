import type { RangeSet } from "../../lanes/index.ts";
import type { ConnectionEvent } from "../../transport/index.ts";
import type { RetainedUnit } from "./writer-state.ts";

/**
 * Everything the volume writer's machine takes: calls (by reply id), inbound messages (receipts
 * already verified by the ingress, which holds the peer keys), completions of its executors'
 * I/O, and its own timers. Time enters as `nowMs`, never read by the step.
 */

/** One verified receipt of a batch: the fields protection and obligations need. */
export interface FoldableReceipt {
  readonly writerTerm: number;
  readonly topologyEpoch: number;
  readonly receiptSeq: number;
  readonly retained: RangeSet;
}

/** One receipt batch as the ingress passed it on: verified (`receipt`) or refused with its code. */
export type ReceiptArrival = Extract<WriterEvent, { type: "receipt" | "receipt.invalid" }>;

/** A completed SmartWAL write (the data is the writer's own copy). */
export interface WalWritten {
  readonly id: number;
  readonly lba: number;
  readonly data: Uint8Array;
  readonly lsn: number;
}

/** A write call: its reply id, where, and what (with custody on the writer's own copy, taken at the call). */
export interface WriteCall {
  readonly id: number;
  readonly lba: number;
  readonly data: Uint8Array;
}

export type WriterEvent =
  | { readonly type: "write"; readonly id: number; readonly lba: number; readonly data: Uint8Array }
  /** The write calls of one turn, in call order: one event for all of them (each as a `write`). */
  | { readonly type: "writes"; readonly writes: readonly WriteCall[] }
  | {
      readonly type: "sync";
      readonly id: number;
      readonly contract?: string | undefined;
      readonly timeoutMs?: number | undefined;
    }
  | {
      readonly type: "wal.written";
      readonly nowMs: number;
      readonly writes: readonly WalWritten[];
      /** SmartWAL writes of the same turn that failed (their callers already have the error). */
      readonly failed?: number;
    }
  | { readonly type: "cut" }
  | { readonly type: "unit.sealed"; readonly nowMs: number; readonly lane: string; readonly unit: RetainedUnit }
  | { readonly type: "outbox.flushed"; readonly nowMs: number; readonly covered: number }
  | { readonly type: "outbox.failed" }
  | {
      readonly type: "sync.local";
      readonly id: number;
      readonly durableLsn: number;
      readonly contract: string | undefined;
      readonly target: Readonly<Record<string, number>>;
      readonly timeoutMs: number;
    }
  | { readonly type: "waiter.timeout"; readonly id: number }
  | {
      readonly type: "receipt";
      readonly lane: string;
      readonly holder: string;
      readonly incarnation: number;
      readonly receipts: readonly FoldableReceipt[];
    }
  | { readonly type: "receipt.invalid"; readonly lane: string; readonly code: string }
  /** The receipt batches (verified or not) that arrived in one turn, in arrival order: one event for all. */
  | { readonly type: "receipts"; readonly batches: readonly ReceiptArrival[] }
  | { readonly type: "nats.status"; readonly data: Uint8Array }
  | { readonly type: "nats.release"; readonly data: Uint8Array }
  | {
      readonly type: "release.checked";
      readonly lane: string;
      readonly holder: string;
      readonly ranges: RangeSet;
      readonly unverified: boolean;
    }
  | {
      readonly type: "transport.connection";
      readonly event: ConnectionEvent;
      readonly nowMs: number;
      /** `lane/holder` of first hops whose credit sender still has units queued. */
      readonly busy: readonly string[];
    }
  | {
      readonly type: "edge.reset";
      readonly lane: string;
      readonly holder: string;
      readonly incarnation: number;
      readonly restarted: boolean;
    }
  | { readonly type: "resend.due"; readonly nowMs: number; readonly busy: readonly string[] }
  | { readonly type: "progress.due"; readonly nowMs: number }
  | { readonly type: "timer.resend" }
  | { readonly type: "timer.progress" }
  | { readonly type: "fence"; readonly newTerm: number }
  | { readonly type: "stop" };

/** The key of one first hop of one lane in `busy` lists. */
export const edgeKey = (lane: string, holder: string): string => `${lane}/${holder}`;
