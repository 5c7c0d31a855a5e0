/**
 * What a chaos run saw of its control plane (pure: the watcher feeds it observations with their
 * times). Two figures:
 *
 * - failovers: how many times the control stream's leader (the server STREAM.INFO names in
 *   `cluster.leader`) changed between two probes that named one, plus how many times the
 *   volume's lease holder (the folded log's `leases`) changed from one controller to another. The
 *   first leader and the first holder seen are not changes; a holder that claims a new term of its
 *   own (a restarted process) is not one either.
 * - unavailability: the longest stretch without a successful probe, from the last success before
 *   it to the next success (or to the end of the watch when none came): a probe that fails or
 *   times out means a control commit could not be made then. With no failure it is one probe
 *   interval or so.
 */
export class ControlPlaneTally {
  private leader: string | undefined;
  private holder: string | undefined;
  private lastOkMs: number | undefined;
  private startMs: number | undefined;
  private worstGapMs = 0;
  /** Stream-leader changes seen. */
  leaderChanges = 0;
  /** Lease-holder changes seen. */
  holderChanges = 0;

  /** One probe at `atMs`: `ok` when the stream answered, naming `leader` (undefined: none elected). */
  probe(atMs: number, ok: boolean, leader?: string): void {
    this.startMs ??= atMs;
    const answered = ok && leader !== undefined && leader !== "";
    if (!answered) return;
    this.worstGapMs = Math.max(this.worstGapMs, atMs - (this.lastOkMs ?? atMs));
    this.lastOkMs = atMs;
    if (this.leader !== undefined && this.leader !== leader) this.leaderChanges++;
    this.leader = leader;
  }

  /** The volume's lease holder as folded at some moment (undefined: unleased). */
  leaseHolder(holder: string | undefined): void {
    if (holder === undefined) return;
    if (this.holder !== undefined && this.holder !== holder) this.holderChanges++;
    this.holder = holder;
  }

  /** The stream leader last named by a probe. */
  get streamLeader(): string | undefined {
    return this.leader;
  }

  /** When a probe last found an elected stream leader (undefined: never). */
  get lastAnsweredMs(): number | undefined {
    return this.lastOkMs;
  }

  /** The lease holder last seen. */
  get activeController(): string | undefined {
    return this.holder;
  }

  /** Failovers: stream-leader changes plus lease-holder changes. */
  get failovers(): number {
    return this.leaderChanges + this.holderChanges;
  }

  /** The longest stretch without a successful probe up to `endMs` (ms). */
  maxUnavailableMs(endMs: number): number {
    const since = this.lastOkMs ?? this.startMs ?? endMs;
    return Math.max(this.worstGapMs, endMs - since);
  }
}
