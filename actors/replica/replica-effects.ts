import type { InboundMessage } from "../../transport/index.ts";
import type { WireCredit } from "../../transport/protocol/index.ts";
import type { CatchUpReport } from "./catch-up-report.ts";

/**
 * What the replica's pure step asks its executors to do, and the events that feed it (issue #48).
 * Effects are data; the executors (supplied by startReplica, actors/replica/replica.ts) touch the volume,
 * the position file and the transport, and send the completion of each asynchronous effect back as
 * an event. Writes, syncs and position writes run in the order they were emitted (I7: a record's
 * data is written before its local WAL record, which SmartWAL's `write` does; a barrier's position
 * is persisted only after everything before it was written and synced).
 */

/** One block-aligned write to the local volume. */
export interface VolumeWrite {
  readonly lba: number;
  readonly data: Uint8Array;
}

/** One step of catch-up, as the catch-up flow hands it to the replica (in order). */
export type ApplyOp =
  /** A whole source write (its last piece): skipped as a duplicate at or below the applied LSN. */
  | { readonly kind: "record"; readonly lsn: number; readonly lba: number; readonly data: Uint8Array }
  /** A piece of a source write too large for one chunk: written unless the write is already applied. */
  | { readonly kind: "piece"; readonly lsn: number; readonly lba: number; readonly data: Uint8Array }
  /** Snapshot blocks (null = unmapped, written as zeros); afterwards the replica is at `asOfLsn` (0: not yet). */
  | {
      readonly kind: "blocks";
      readonly blocks: readonly { readonly lba: number; readonly data: Uint8Array | null }[];
      readonly asOfLsn: number;
    };

/** Why a local caller's request was refused. */
export const ReplicaRefusal = {
  /** The replica stopped before the request completed. */
  Stopped: "replica_stopped",
  /** A volume write, sync or position write failed: nothing after it is applied or made durable. */
  VolumeFailed: "replica_volume_failed",
} as const;
export type ReplicaRefusal = (typeof ReplicaRefusal)[keyof typeof ReplicaRefusal];

/** Why a catch-up could not start. */
export type CatchUpUnavailability = "in_progress" | "not_serving" | "stopped";

export type ReplicaEffect =
  | { readonly type: "count"; readonly name: string }
  | { readonly type: "publishGrant"; readonly subject: string; readonly grant: WireCredit }
  /** Writes in order; completes with `applied` (or `applyFailed`) carrying `throughLsn` and `id`. */
  | {
      readonly type: "apply";
      readonly writes: readonly VolumeWrite[];
      readonly throughLsn: number;
      readonly id?: number;
    }
  /** Makes everything written so far durable on the volume (extent and local WAL). */
  | { readonly type: "syncVolume" }
  /** Writes and fdatasyncs the flushed LSN; completes with `persisted` (or `persistFailed`) for `seq`. */
  | { readonly type: "persistPosition"; readonly seq: number; readonly lsn: number }
  /** Resolves local caller `id` with `value`. */
  | { readonly type: "reply"; readonly id: number; readonly value: number }
  /** Rejects local caller `id` with ReplicaRequestError `code`. */
  | { readonly type: "refuse"; readonly id: number; readonly code: ReplicaRefusal; readonly message: string }
  /** Answers a `replica-barrier` request with `replica-flushed`. */
  | {
      readonly type: "respond";
      readonly subject: string;
      readonly reply: string | undefined;
      readonly flushedLsn: number;
      readonly reached: boolean;
    }
  /** Stops the subscriptions and refuses every local caller still waiting. */
  | { readonly type: "close" }
  | { readonly type: "settleCatchUp"; readonly id: number; readonly report: CatchUpReport }
  /** Rejects catch-up caller `id` with the flow's error (never kept in context). */
  | { readonly type: "failCatchUp"; readonly id: number; readonly error: unknown }
  | { readonly type: "refuseCatchUp"; readonly id: number; readonly reason: CatchUpUnavailability };

/** The events the pure step folds. */
export type ReplicaStepEvent =
  | { readonly type: "started"; readonly incarnation: number; readonly flushedLsn: number }
  /** One message on a lane's unit subject: a unit, a frame of units, a credit request or a barrier. */
  | { readonly type: "nats.message"; readonly lane: string; readonly msg: InboundMessage }
  /** The catch-up flow's ops for one chunk; caller `id` is answered once they are applied. */
  | { readonly type: "apply"; readonly id: number; readonly ops: readonly ApplyOp[] }
  /** A local barrier; caller `id` is answered with the flushed LSN. */
  | { readonly type: "barrier"; readonly id: number }
  | { readonly type: "applied"; readonly throughLsn: number; readonly id?: number }
  | { readonly type: "applyFailed"; readonly message: string; readonly id?: number }
  | { readonly type: "persisted"; readonly seq: number; readonly lsn: number }
  | { readonly type: "persistFailed"; readonly seq: number; readonly message: string }
  | { readonly type: "stop" };

/** The step events that come from outside the machine (`started` is the machine's own, from its start flow). */
export type ReplicaInboundEvent = Exclude<ReplicaStepEvent, { readonly type: "started" }>;
