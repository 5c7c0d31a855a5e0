import type { GrantorLane } from "../hop/index.ts";

/**
 * The replica consumer's state as plain data (issue #48): what its pure step (replica-step.ts)
 * reads and returns, and what its statechart keeps in context. No class instances, closures,
 * promises or reply callbacks: callers waiting on a barrier or an apply are named by id, and the
 * start function (actors/replica/replica.ts) keeps their callbacks.
 */

/** What the replica was started with, as the step needs it. */
export interface ReplicaSettings {
  readonly replicaId: string;
  readonly volume: string;
  readonly lanes: readonly string[];
  /** Writers allowed to push units (credited like any holder's upstream). */
  readonly upstream: readonly string[];
  readonly term: number;
  readonly maxOutstandingCredit: number;
  /** The replica materializes plaintext, so it is an authorized principal of the key authority. */
  readonly dataKey: Uint8Array;
}

/** Who waits on a barrier: a local caller (by id), or a `replica-barrier` request to answer on the wire. */
export type BarrierWaiter =
  | { readonly kind: "caller"; readonly id: number }
  | { readonly kind: "wire"; readonly subject: string; readonly reply: string | undefined; readonly targetLsn: number };

/** A barrier whose sync and position write were handed to the executor and have not completed yet. */
export interface PendingBarrier {
  readonly seq: number;
  readonly waiter: BarrierWaiter;
}

export interface ReplicaState {
  readonly settings: ReplicaSettings;
  /** This start's incarnation (0 until started): credit windows name it. */
  readonly incarnation: number;
  /** Credit grant state per lane (empty until started). */
  readonly lanes: Readonly<Record<string, GrantorLane>>;
  /**
   * Highest source LSN handed to the volume executor (writes run in the order they were handed
   * over, so this is what the volume holds once they complete): duplicates are judged against it.
   */
  readonly queuedLsn: number;
  /** Highest source LSN applied (not necessarily durable). */
  readonly appliedLsn: number;
  /** Highest source LSN durable here (data and local WAL), as of the last barrier. */
  readonly flushedLsn: number;
  readonly nextBarrierSeq: number;
  readonly barriers: readonly PendingBarrier[];
}

export interface ReplicaConfig {
  readonly replicaId: string;
  readonly volume: string;
  readonly lanes: readonly string[];
  readonly upstream: readonly string[];
  readonly term: number;
  readonly maxOutstandingCredit?: number;
}

/** The state before start: nothing applied, no lanes granted yet. */
export function initialReplicaState(config: ReplicaConfig, dataKey: Uint8Array): ReplicaState {
  const { replicaId, volume, lanes, upstream, term } = config;
  return {
    settings: {
      replicaId,
      volume,
      lanes,
      upstream,
      term,
      maxOutstandingCredit: config.maxOutstandingCredit ?? 1 << 20,
      dataKey,
    },
    incarnation: 0,
    lanes: {},
    queuedLsn: 0,
    appliedLsn: 0,
    flushedLsn: 0,
    nextBarrierSeq: 1,
    barriers: [],
  };
}
