import type { KeyObject } from "node:crypto";
import type { Clock } from "../core/index.ts";
import type { ControlLogFollower } from "./control-log-follower.ts";
import { releasedRanges, type ControlState } from "./control-state.ts";
import { flushableAt } from "./control-persistence.ts";
import type { RangeSet } from "../lanes/index.ts";
import { publicKeyFromRaw } from "./signing.ts";

/**
 * Who may sign receipts now, as the control log says: the admitted key of each holder's current
 * incarnation. Actors that verify receipts (holders checking their edges, the volume writer
 * checking its first hops) read it instead of a static list, so a restarted holder's new
 * incarnation is believed exactly when the log admitted it, and its previous one stops counting.
 * The log is re-read at most every `refreshMs`, and sooner when someone asks about an incarnation
 * newer than the one known (a receipt from a just-admitted restart).
 */
export class ControlLogPeers {
  private readonly keys = new Map<string, KeyObject>();
  private lastRefresh = -Infinity;
  private inFlight: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** Whether the queued read must first ask the store for its head (someone asked with `toHead`). */
  private queuedToHead = false;
  /** Called after each refresh that changed the state (e.g. to re-verify or re-announce). */
  onChange: ((s: ControlState) => void) | undefined;

  constructor(
    private readonly follower: ControlLogFollower,
    private readonly clock: Clock,
    private readonly refreshMs = 1_000,
  ) {}

  /** The folded control state as of the last refresh. */
  get state(): ControlState {
    return this.follower.state;
  }

  /** The admitted key of `holderId` at `incarnation`, when that is its current admitted incarnation. */
  key(holderId: string, incarnation: number): KeyObject | undefined {
    const h = this.follower.state.holders[holderId];
    if (h === undefined || h.incarnation !== incarnation) {
      if (h === undefined || incarnation > h.incarnation) this.refreshSoon(true);
      return undefined;
    }
    const cacheKey = `${holderId}#${incarnation}`;
    let k = this.keys.get(cacheKey);
    if (k === undefined) {
      k = publicKeyFromRaw(h.publicKey);
      this.keys.set(cacheKey, k);
    }
    return k;
  }

  /** What the log has released at `holderId` under `obligationId`, as of the last refresh. */
  releasedAt(obligationId: string, holderId: string): RangeSet {
    return releasedRanges(this.follower.state, obligationId, holderId);
  }

  /**
   * The part of `seqs` of a lane that `holderId` may persist, as the log's persistence targets say
   * (all of it without a choice). Asking keeps the log fresh, so a new choice is followed within
   * `refreshMs`.
   */
  flushable(holderId: string, volume: string, lane: string, seqs: RangeSet): RangeSet {
    this.refreshSoon(false);
    return flushableAt(this.follower.state.persistence, holderId, volume, lane, seqs);
  }

  /** The current admitted incarnation of `holderId`, if it was ever admitted. */
  incarnation(holderId: string): number | undefined {
    this.refreshSoon(false);
    return this.follower.state.holders[holderId]?.incarnation;
  }

  /**
   * Re-reads the log now (errors are left to the follower, which then distrusts the log). A read
   * already in flight may have started before the commit the caller has just learned of (a release
   * frontier naming it), so the caller gets the next read after it, shared by everyone who asks
   * meanwhile; joining the old one counted a legitimate frontier as unbacked. `toHead`: the read
   * asks the store how far the log goes first (ControlLogFollower.refreshToHead).
   */
  async refresh(toHead = false): Promise<ControlState> {
    if (this.inFlight === undefined) {
      this.inFlight = this.read(toHead);
      await this.inFlight;
    } else {
      this.queuedToHead ||= toHead;
      this.queued ??= this.inFlight
        .catch(() => undefined)
        .then(() => {
          const head = this.queuedToHead;
          this.queued = undefined;
          this.queuedToHead = false;
          this.inFlight = this.read(head);
          return this.inFlight;
        });
      await this.queued;
    }
    return this.follower.state;
  }

  private read(toHead: boolean): Promise<void> {
    const before = this.follower.state.lastSeq;
    this.lastRefresh = this.clock.now();
    const p: Promise<void> = (toHead ? this.follower.refreshToHead() : this.follower.refresh())
      .then((s) => {
        if (s.lastSeq !== before) this.onChange?.(s);
      })
      .finally(() => {
        if (this.inFlight === p) this.inFlight = undefined;
      });
    return p;
  }

  private refreshSoon(urgent: boolean): void {
    const age = this.clock.now() - this.lastRefresh;
    if (this.inFlight !== undefined || age < (urgent ? this.refreshMs / 10 : this.refreshMs)) return;
    this.refresh().catch(() => undefined);
  }
}
