import type { RangeSet } from "../lanes/index.ts";
import { ControlLogRegressionCode, ControlLogRegressionError } from "./control-error.ts";
import type { ControlLogStore } from "./control-log.ts";
import { isSnapshotRecord } from "./control-snapshot.ts";
import {
  foldControlLog,
  INITIAL_CONTROL_STATE,
  isReleaseAuthorized,
  type ControlLogRecord,
  type ControlState,
} from "./control-state.ts";
import type { ControlTrust } from "./control-trust.ts";

/**
 * A reader of one control log that remembers the newest head it has seen (sequence + hash) and
 * refuses any later view of the log that is shorter or different at that head.
 *
 * Guarantees: `state` only moves forward; after a regression or fork is detected the follower
 * keeps its newer state, stays `distrusted`, and `isReleaseAuthorized` answers false for
 * everything, so no release is authorized from the older log (an operator must investigate).
 */
export class ControlLogFollower {
  private current: ControlState;
  private problem: ControlLogRegressionError | undefined;

  /**
   * `seen` is the newest state this reader already trusted (e.g. persisted by a controller before
   * it restarted); the log must not go behind it. Default: nothing seen yet.
   */
  constructor(
    private readonly store: ControlLogStore,
    seen: ControlState = INITIAL_CONTROL_STATE,
    /** With a trust root, only entries a trusted operator or admitted controller signed count. */
    private readonly trust?: ControlTrust,
  ) {
    this.current = seen;
  }

  /** The newest folded state this follower has accepted. */
  get state(): ControlState {
    return this.current;
  }

  /** The regression that made this follower stop trusting the log, if any. */
  get distrusted(): ControlLogRegressionError | undefined {
    return this.problem;
  }

  /**
   * `refresh`, after asking the store how far the log goes now, so the fold includes every entry
   * committed by then — what a reader needs after hearing of a commit some other way (a release
   * frontier, another process's command): a store's standing tail may deliver it later. One more
   * request to the store than `refresh`.
   */
  async refreshToHead(): Promise<ControlState> {
    await this.store.lastSeq();
    return this.refresh();
  }

  /**
   * Reads what is new and folds it. The last entry already folded is read again and must still
   * carry the same hash; the store must not end before it. Throws ControlLogRegressionError
   * (`log_regression`, `log_fork`, `chain_broken`, `unreadable_entry`) and then stays distrusted.
   */
  async refresh(): Promise<ControlState> {
    this.throwIfDistrusted();
    const s = this.current;
    if (s.lastSeq === 0) return this.accept(this.fold(await this.read(1), INITIAL_CONTROL_STATE));
    const entries = await this.read(s.lastSeq);
    const first = entries[0];
    // The entries from the head on were purged below a snapshot: fold on from it (foldSnapshotRecord checks it).
    if (first !== undefined && first.seq > s.lastSeq && isSnapshotRecord(first))
      return this.accept(this.fold(entries, s));
    if (first === undefined || first.seq !== s.lastSeq) {
      const last = await this.store.lastSeq();
      if (first === undefined && last < s.lastSeq)
        this.distrust(
          ControlLogRegressionCode.log_regression,
          `control log ${this.store.region} ends at ${last}, before head ${s.lastSeq} already seen`,
          { seen: s.lastSeq, last },
        );
      this.distrust(
        ControlLogRegressionCode.log_regression,
        `control log ${this.store.region} no longer holds head ${s.lastSeq}`,
        { seen: s.lastSeq, last },
      );
    }
    if (first.hash !== (s.lastEntryHash ?? s.headHash))
      this.distrust(
        ControlLogRegressionCode.log_fork,
        `control log ${this.store.region} holds a different event at ${s.lastSeq}`,
        { seq: s.lastSeq, seen: s.headHash, found: first.hash },
      );
    return this.accept(this.fold(entries.slice(1), s));
  }

  /** Folds `entries` onto `from`; a ControlLogRegressionError makes this follower distrust the log. */
  private fold(entries: readonly ControlLogRecord[], from: ControlState): ControlState {
    try {
      return foldControlLog(entries, from, this.trust);
    } catch (err) {
      if (err instanceof ControlLogRegressionError) this.distrust(err.code, err.message, err.detail);
      throw err;
    }
  }

  /**
   * Re-reads and re-folds the whole log from the first event (e.g. after a store restart) and
   * checks it against the head already seen. Same errors as `refresh`.
   */
  async replay(): Promise<ControlState> {
    this.throwIfDistrusted();
    const seen = this.current;
    let folded: ControlState;
    let hashAtSeen: string | undefined;
    let purgedPastSeen = false;
    try {
      const entries = await this.read(1);
      hashAtSeen = entries.find((e) => e.seq === seen.lastSeq)?.hash;
      // The head seen was purged below a snapshot: the fold checks that snapshot instead (signature, content, not
      // behind).
      purgedPastSeen = entries[0] !== undefined && entries[0].seq > seen.lastSeq && isSnapshotRecord(entries[0]);
      // Folded onto what was seen, the snapshot must not go behind it either (`snapshot_regressed`).
      folded = foldControlLog(entries, purgedPastSeen ? seen : INITIAL_CONTROL_STATE, this.trust);
    } catch (err) {
      if (err instanceof ControlLogRegressionError) this.distrust(err.code, err.message, err.detail);
      throw err;
    }
    if (folded.lastSeq < seen.lastSeq)
      this.distrust(
        ControlLogRegressionCode.log_regression,
        `replayed control log ${this.store.region} ends at ${folded.lastSeq}, before head ${seen.lastSeq} already seen`,
        { seen: seen.lastSeq, last: folded.lastSeq },
      );
    if (seen.lastSeq > 0 && !purgedPastSeen && hashAtSeen !== (seen.lastEntryHash ?? seen.headHash))
      this.distrust(
        ControlLogRegressionCode.log_fork,
        `replayed control log ${this.store.region} differs at ${seen.lastSeq}`,
        { seq: seen.lastSeq },
      );
    return this.accept(folded);
  }

  /** True only when the log is trusted and a committed release authorizes `holderId` to forget all of `ranges`. */
  isReleaseAuthorized(obligationId: string, holderId: string, ranges: RangeSet): boolean {
    return this.problem === undefined && isReleaseAuthorized(this.current, obligationId, holderId, ranges);
  }

  /**
   * Every record from `seq` on, snapshots included. With a trust root the fold skips unreadable
   * ones (junk from someone with append rights must not stop every reader for good); without one,
   * the fold stops at them (`unreadable_entry`).
   */
  private read(seq: number): Promise<ControlLogRecord[]> {
    return this.store.readRecordsFrom(seq);
  }

  private accept(s: ControlState): ControlState {
    this.current = s;
    return s;
  }

  private throwIfDistrusted(): void {
    if (this.problem !== undefined) throw this.problem;
  }

  private distrust(code: ControlLogRegressionCode, message: string, detail: Record<string, unknown>): never {
    this.problem = new ControlLogRegressionError(code, message, detail);
    throw this.problem;
  }
}
