import { CustodyError } from "../core/index.ts";
import { ControlConflictError } from "./control-error.ts";
import type { ControlLogFollower } from "./control-log-follower.ts";
import type { ControlLogStore } from "./control-log.ts";
import { CONTROL_SNAPSHOT_MAX_BYTES, encodeControlSnapshot, isSnapshotRecord } from "./control-snapshot.ts";
import type { ControlSigner } from "./control-trust.ts";

/**
 * The control log cannot be compacted: the store has no snapshots or purge, the snapshot is too large, or it did not
 * verify.
 */
export class ControlLogNotCompactableError extends CustodyError {
  constructor(region: string, why: string, detail: Record<string, unknown> = {}) {
    super("control_log_not_compactable", `control log ${region} cannot be compacted: ${why}`, { region, ...detail });
  }
}

/** What one compaction did. */
export interface CompactionResult {
  /** Where the snapshot was committed; every entry below it was purged. */
  readonly snapshotSeq: number;
  /** The last entry the snapshot's state folded (`snapshotSeq - 1`). */
  readonly throughSeq: number;
  /** Entries removed by the purge. */
  readonly purged: number;
  /** Size of the snapshot's canonical bytes. */
  readonly snapshotBytes: number;
}

/**
 * The operator's compaction of one control log (`custody log compact`, once or on a timer with
 * `--every`): fold the log, commit a snapshot of the state right after
 * the entry it folded (signed with the operator key in a signed log), fold it back — which checks
 * it against the fold it was made from — and only then purge every entry below it. The purge right
 * is the operator's alone (transport/security/principal-permissions.ts), and the operator key is the only key
 * a reader trusts for a snapshot, so no other role gains anything here.
 */
export class ControlLogCompactor {
  #lastSnapshotSeq = 0;
  #found = false;

  constructor(
    private readonly store: ControlLogStore,
    /** The operator's follower of the log (with the deployment's trust root in a signed log). */
    private readonly follower: ControlLogFollower,
    /** The operator key; required when the log's readers hold a trust root. */
    private readonly signer?: ControlSigner,
    /** Entries committed since the last snapshot before another is due. */
    private readonly everyEntries = 1_000,
    /** Tries when a controller's commit takes the snapshot's position first. */
    private readonly attempts = 8,
  ) {}

  /** Position of the newest snapshot this compactor committed (0 before the first). */
  get lastSnapshotSeq(): number {
    return this.#lastSnapshotSeq;
  }

  /**
   * Compacts when `everyEntries` entries were committed since the newest snapshot (found in the log
   * on the first call, so a restarted compactor does not snapshot again at once); undefined when
   * not due. Same errors as `compact`.
   */
  async compactIfDue(): Promise<CompactionResult | undefined> {
    if (!this.#found) {
      // After a purge the log starts at its newest snapshot.
      const first = (await this.store.readRecordsFrom(1))[0];
      if (first !== undefined && isSnapshotRecord(first))
        this.#lastSnapshotSeq = Math.max(this.#lastSnapshotSeq, first.seq);
      this.#found = true;
    }
    const s = await this.follower.refreshToHead();
    if (s.lastSeq - this.#lastSnapshotSeq < this.everyEntries) return undefined;
    return this.compact();
  }

  /**
   * Snapshots the log at its current head and purges below the snapshot. Throws ControlConflictError
   * when other commits won the position `attempts` times (nothing was purged), ControlLogRegressionError
   * from the follower, and ControlLogNotCompactableError.
   */
  async compact(): Promise<CompactionResult> {
    const { store } = this;
    if (store.appendSnapshot === undefined || store.purgeBelow === undefined)
      throw new ControlLogNotCompactableError(store.region, "its store keeps no snapshots");
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.snapshotAndPurge(store.appendSnapshot.bind(store), store.purgeBelow.bind(store));
      } catch (err) {
        // A controller committed first: the snapshot must be of the newer head, so fold again.
        if (!(err instanceof ControlConflictError) || attempt >= this.attempts) throw err;
      }
    }
  }

  private async snapshotAndPurge(
    appendSnapshot: NonNullable<ControlLogStore["appendSnapshot"]>,
    purgeBelow: NonNullable<ControlLogStore["purgeBelow"]>,
  ): Promise<CompactionResult> {
    const { store } = this;
    const s = await this.follower.refresh();
    const body = encodeControlSnapshot(store.region, s);
    // Room for the message envelope and the signature.
    if (body.byteLength > CONTROL_SNAPSHOT_MAX_BYTES - 4_096)
      throw new ControlLogNotCompactableError(
        store.region,
        `its state (${body.byteLength} bytes) exceeds one snapshot message`,
        { bytes: body.byteLength },
      );
    const seq = await appendSnapshot(body, s.lastSeq, this.signer);
    // Purge only below a snapshot this follower verified against its own fold: a mismatch throws
    // here, and a snapshot readers would skip (not an operator's signature) is in `rejected`.
    const after = await this.follower.refresh();
    const refused = after.rejected.find((r) => r.seq === seq);
    if (refused !== undefined)
      throw new ControlLogNotCompactableError(
        store.region,
        `its readers refuse the snapshot at ${seq}: ${refused.message}`,
        { seq, why: refused.code },
      );
    const purged = await purgeBelow(seq);
    this.#lastSnapshotSeq = seq;
    return { snapshotSeq: seq, throughSeq: s.lastSeq, purged, snapshotBytes: body.byteLength };
  }
}
