import type { RecoveryDecision } from "../../volume/index.ts";

/** What a catch-up did. */
export interface CatchUpReport {
  readonly decision: RecoveryDecision;
  readonly reason: string;
  /** R, S, H as probed. */
  readonly replicaFlushedLsn: number;
  readonly walStart: number;
  readonly walHead: number;
  readonly walRecordsReplayed: number;
  readonly deltaBlocks: number;
  readonly flushedLsn: number;
  /**
   * True when WAL catch-up was decided but the ring could not serve it (window moved, or a record unreadable), so a
   * delta was used.
   */
  readonly fellBackToDelta: boolean;
}
