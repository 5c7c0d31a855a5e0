import {
  eventScope,
  foldControlEntry,
  INITIAL_CONTROL_STATE,
  type ControlLogRecord,
  type ControlLogStore,
  type ControlState,
} from "../custody/index.ts";
import { InvariantId, type Violation } from "./invariants.ts";

/** How the audit folds an entry: the production fold, or (in a test proving the checks can fail) a weakened one. */
export type EntryFold = (s: ControlState, entry: ControlLogRecord) => ControlState;

/**
 * The simulator's checks of control leases, read from the control log as any auditor would. It
 * asks the fold only which entries it accepted; who holds each volume's lease it tracks itself from
 * the accepted claims (a claim must advance the term), so a fold that let a deposed controller
 * through would be caught, not trusted. For each accepted entry of a controller (an author that
 * claimed a lease) touching a leased volume:
 * - `two_committers_in_term`: its author is not that term's holder (two committers in one term),
 *   or a claim did not advance the term;
 * - `deposed_release`: it is a release, and its author is not the holder.
 */
export class LeaseAudit {
  private state: ControlState = INITIAL_CONTROL_STATE;
  private readonly holders = new Map<string, { holder: string; term: number }>();
  private readonly claimants = new Set<string>();
  private refused = 0;

  constructor(
    private readonly store: ControlLogStore,
    private readonly fold: EntryFold = foldControlEntry,
  ) {}

  /** Folds what is new in the log; the violations it shows (at `atMs`). */
  async check(atMs: number): Promise<Violation[]> {
    const out: Violation[] = [];
    for (const entry of await this.store.readFrom(this.state.lastSeq + 1)) {
      const before = this.state;
      this.state = this.fold(before, entry);
      const refusal = this.state.rejected.length > before.rejected.length ? this.state.rejected.at(-1) : undefined;
      if (refusal !== undefined) {
        if (refusal.code === "not_lease_holder" || refusal.code === "stale_term") this.refused++;
        continue;
      }
      const e = entry.event;
      const author = e.controller;
      if (e.type === "claim_lease") {
        const cur = this.holders.get(e.volume);
        if (cur !== undefined && e.term <= cur.term) {
          out.push({
            invariant: InvariantId.twoCommittersInTerm,
            atMs,
            message:
              `claim of ${e.volume} by ${author} for term ${e.term} (seq ${entry.seq}) ` +
              `accepted although ${cur.holder} holds term ${cur.term}`,
            detail: { volume: e.volume, term: e.term, seq: entry.seq, holder: cur.holder, author },
          });
        }
        this.holders.set(e.volume, { holder: author, term: e.term });
        this.claimants.add(author);
        continue;
      }
      if (!this.claimants.has(author)) continue;
      const scope = eventScope(before, e);
      for (const [volume, lease] of this.holders) {
        if (lease.holder === author || (scope.every !== true && !scope.volumes.includes(volume))) continue;
        const release = e.type === "release_ranges" || e.type === "release_to_base";
        out.push({
          invariant: release ? InvariantId.deposedRelease : InvariantId.twoCommittersInTerm,
          atMs,
          message:
            `${e.type} by ${author} (seq ${entry.seq}) ` +
            `accepted in term ${lease.term} of ${volume}, which ${lease.holder} holds`,
          detail: { volume, term: lease.term, seq: entry.seq, holder: lease.holder, author },
        });
      }
    }
    return out;
  }

  /** Lease terms claimed so far (all volumes) and commits the fold refused as a deposed controller's. */
  figures(): { terms: number; refused: number } {
    let terms = 0;
    for (const l of this.holders.values()) terms += l.term;
    return { terms, refused: this.refused };
  }
}
