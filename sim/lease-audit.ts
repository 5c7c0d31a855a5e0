import { eventScope, foldControlEntry, INITIAL_CONTROL_STATE, leaseOf, type ControlLogStore, type ControlState } from "../custody/index.ts";
import { InvariantId, type Violation } from "./invariants.ts";

/**
 * The simulator's checks of control leases, read from the control log itself as any auditor
 * would: it folds every new entry and, for each one the fold accepted from a controller (an author
 * that claimed a lease), looks at the leases of the volumes it touches.
 * - `two_committers_in_term`: two controllers had commits accepted in one term of a volume;
 * - `deposed_release`: a release was accepted from a controller that was not the volume's holder.
 * Both are what the fold must never let through; the checks hold it to that from the outside.
 */
export class LeaseAudit {
  private state: ControlState = INITIAL_CONTROL_STATE;
  private readonly committers = new Map<string, string>();

  constructor(private readonly store: ControlLogStore) {}

  /** Folds what is new in the log; the violations it shows (at `atMs`). */
  async check(atMs: number): Promise<Violation[]> {
    const out: Violation[] = [];
    for (const entry of await this.store.readFrom(this.state.lastSeq + 1)) {
      const before = this.state;
      this.state = foldControlEntry(before, entry);
      if (this.state.rejected.length > before.rejected.length) continue;
      const e = entry.event;
      const author = e.controller;
      const claimed = e.type === "claim_lease";
      if (!claimed && before.leases?.claimants.includes(author) !== true) continue;
      const scope = eventScope(before, e);
      const leased = claimed ? [e.volume] : Object.keys(before.leases?.volumes ?? {}).filter((v) => scope.every === true || scope.volumes.includes(v));
      for (const volume of leased) {
        const lease = leaseOf(claimed ? this.state : before, volume)!;
        const key = `${volume}#${lease.term}`;
        const first = this.committers.get(key);
        if (first === undefined) this.committers.set(key, author);
        else if (first !== author) {
          out.push({ invariant: InvariantId.twoCommittersInTerm, atMs, message: `${author}'s ${e.type} (seq ${entry.seq}) was accepted in term ${lease.term} of ${volume}, where ${first} committed`, detail: { volume, term: lease.term, seq: entry.seq, first, author } });
        }
        if ((e.type === "release_ranges" || e.type === "release_to_base") && lease.holder !== author) {
          out.push({ invariant: InvariantId.deposedRelease, atMs, message: `release by ${author} (seq ${entry.seq}) accepted while ${lease.holder} held ${volume} at term ${lease.term}`, detail: { volume, term: lease.term, seq: entry.seq, author, holder: lease.holder } });
        }
      }
    }
    return out;
  }

  /** Terms claimed so far per volume, and the commits refused as a lease holder's (for the run's counters). */
  figures(): { claims: number; refusedLease: number } {
    const terms = Object.values(this.state.leases?.volumes ?? {}).reduce((n, l) => n + l.term, 0);
    const refusedLease = this.state.rejected.filter((r) => r.code === "not_lease_holder" || r.code === "stale_term").length;
    return { claims: terms, refusedLease };
  }
}
