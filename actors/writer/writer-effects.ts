import type { RangeSet } from "../../lanes/index.ts";
import type { WriteRecord } from "../../transport/protocol/index.ts";
import type { MessageHeaders } from "../../transport/index.ts";
import type { WriteAck } from "./writer-ports.ts";
import type { RetainedUnit } from "./writer-state.ts";
import type { WriterEvent } from "./writer-events.ts";

/**
 * What the writer's pure step asks its executors to do, as data. The machine runs `schedule` and
 * `cancel` itself (its own delayed events); the start function's executors run the rest: the
 * transport, the volume, the outbox, sealing, counters, and the callers' replies (kept by id).
 */

/** What a sync resolves to. */
export interface SyncOutcome {
  readonly durableLsn: number;
  readonly heads: Record<string, number>;
}

/** Why a call is refused; the executor turns it into the matching error class. */
export type WriterRefusal =
  | { readonly kind: "fenced"; readonly detail: Record<string, unknown> }
  | { readonly kind: "rejected"; readonly message: string; readonly detail: Record<string, unknown> }
  | { readonly kind: "unknown_contract"; readonly contract: string }
  | { readonly kind: "protection_timeout"; readonly detail: Record<string, unknown> };

export type WriterEffect =
  | { readonly type: "count"; readonly name: string; readonly by?: number }
  | { readonly type: "reply"; readonly id: number; readonly value: WriteAck | SyncOutcome }
  | { readonly type: "refuse"; readonly id: number; readonly refusal: WriterRefusal }
  /** SmartWAL write of `data` (the writer's own copy with custody on); its completion comes back in `wal.written`. */
  | { readonly type: "walWrite"; readonly id: number; readonly lba: number; readonly data: Uint8Array }
  /** Seal `records` into one unit of `lane`; the sealed unit comes back as `unit.sealed`. */
  | {
      readonly type: "seal";
      readonly lane: string;
      readonly firstSeq: number;
      readonly lastSeq: number;
      readonly records: readonly WriteRecord[];
      readonly commitTs: readonly number[];
    }
  /** Hand `unit` to every first hop's credit sender (dropped unsent once no longer retained). */
  | { readonly type: "send"; readonly lane: string; readonly unit: RetainedUnit }
  /** Hand retained units to one first hop's credit sender again (gap repair). */
  | { readonly type: "resend"; readonly lane: string; readonly holder: string; readonly units: readonly RetainedUnit[] }
  | { readonly type: "requestCredit"; readonly lane: string; readonly holder: string }
  /** Make the outbox durable; `outbox.flushed` with `covered` follows (or `outbox.failed`). */
  | { readonly type: "outboxFlush"; readonly covered: number }
  | { readonly type: "outboxDrop"; readonly lane: string; readonly seqs: RangeSet }
  /** SyncCache of the volume and the outbox; `sync.local` follows. */
  | {
      readonly type: "syncLocal";
      readonly id: number;
      readonly contract: string | undefined;
      readonly target: Readonly<Record<string, number>>;
      readonly timeoutMs: number;
    }
  | {
      readonly type: "publish";
      readonly subject: string;
      readonly payload: Uint8Array;
      readonly headers?: MessageHeaders;
    }
  /** Check a first hop's release frontier against the control log; `release.checked` follows. */
  | { readonly type: "backRelease"; readonly lane: string; readonly holder: string; readonly ranges: RangeSet }
  /** Records for the coalescing consumer (a coalesced stream only). */
  | { readonly type: "coalesce"; readonly notes: readonly CoalesceNote[] }
  | { readonly type: "coalesceTick" }
  | { readonly type: "receiptFolded"; readonly lane: string }
  | { readonly type: "schedule"; readonly timer: string; readonly delayMs: number; readonly event: WriterEvent }
  | { readonly type: "cancel"; readonly timer: string };

/** One raw record for the coalescing consumer; `endOfWrite` on the last piece of a write. */
export interface CoalesceNote {
  readonly lane: string;
  readonly rec: WriteRecord;
  readonly at: number;
  readonly endOfWrite: boolean;
}

/** The result of one step: the new state and what to do. */
export interface StepResult<S> {
  readonly state: S;
  readonly effects: WriterEffect[];
}
