import { CustodyError, type Clock, type Counters } from "../../core/index.ts";
import {
  commitControlEvent,
  ControlFenceCode,
  ControlFenceError,
  leaseOf,
  type ControlLogFollower,
  type ControlLogStore,
  type ControllerIdentity,
} from "../../custody/index.ts";
import {
  BLIND_AFTER_CHECKS,
  leaseStep,
  UNWATCHED,
  watchSilence,
  type LeaseRole,
  type LeaseTimings,
  type SilenceWatch,
} from "./lease-step.ts";

/** What the keeper drives: the controller's job, started on taking the lease and stopped on losing it. */
export interface LeaseKeeperPorts {
  readonly store: ControlLogStore;
  /** Its own reader of the log (the controller it starts keeps another). */
  readonly follower: ControlLogFollower;
  readonly identity: ControllerIdentity;
  readonly clock: Clock;
  readonly counters: Counters;
  /** One line for the process log. */
  readonly log: (line: string) => void;
  /** Starts the controller's job from the folded log (evaluation, receipts, releases, repair). */
  readonly becomeActive: () => Promise<void>;
  /** Stops it: nothing more is committed. */
  readonly stepDown: () => Promise<void>;
}

/**
 * Keeps one volume's control lease for a controller process (see custody/control-lease.ts and
 * lease-step.ts). Every `checkMs` it folds the log, notes by its own clock when the lease's holder,
 * term or heartbeat last changed (counting only time it could read the log: watchSilence), and
 * claims, renews, steps down or waits. Ticks never overlap.
 * A claim that loses a race or a renewal the fold refuses is counted (`lease_claim_<code>`,
 * `lease_renew_<code>`) and decided again on the next tick from the log, never retried blindly.
 */
export class LeaseKeeper {
  private roleNow: LeaseRole = "standby";
  private watch: SilenceWatch = UNWATCHED;
  private timer: ReturnType<typeof setInterval> | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly volume: string,
    private readonly timings: LeaseTimings,
    private readonly ports: LeaseKeeperPorts,
  ) {}

  /** `active` while this process holds the lease and runs the controller's job. */
  get role(): LeaseRole {
    return this.roleNow;
  }

  private get me(): string {
    return this.ports.identity.controller;
  }

  /** Ticks now and then every `checkMs` until `stop`. Resolves after the first tick. */
  async start(): Promise<void> {
    this.timer = setInterval(() => void this.tick(), this.timings.checkMs);
    await this.tick();
  }

  /** One decision (serialized after any tick in progress). Never throws; failures are counted. */
  tick(): Promise<void> {
    this.ticking = this.ticking
      .then(() => (this.stopped ? undefined : this.step()))
      .catch((err: unknown) => {
        this.ports.counters.inc(`lease_tick_${err instanceof CustodyError ? err.code : "failed"}`);
      });
    return this.ticking;
  }

  private async step(): Promise<void> {
    const s = await this.ports.follower.refresh();
    const lease = leaseOf(s, this.volume);
    const now = this.ports.clock.now();
    const key = lease === undefined ? "none" : `${lease.holder}/${lease.term}/${lease.heartbeatSeq}`;
    const blindAfterMs = BLIND_AFTER_CHECKS * this.timings.checkMs;
    this.watch = watchSilence(this.watch, key, now, blindAfterMs);
    const silentMs = now - this.watch.sinceMs;
    const next = leaseStep(this.me, this.roleNow, lease, silentMs);
    switch (next.kind) {
      case "wait":
        return;
      case "step_down":
        return this.depose(`${next.holder} holds it at term ${next.term}`);
      case "renew":
        return this.renew(next.term);
      case "claim": {
        const from =
          lease === undefined
            ? "unleased"
            : `${lease.holder} at term ${lease.term}, silent for ${silentMs} ms by this clock`;
        return this.claim(next.term, from);
      }
    }
  }

  /** Renews this controller's lease at `term`; a renewal the log refuses as not ours (any more) deposes it. */
  private async renew(term: number): Promise<void> {
    try {
      await commitControlEvent(this.ports.store, this.ports.follower, this.ports.identity, () => ({
        type: "renew_lease",
        volume: this.volume,
        term,
      }));
      this.ports.counters.inc("lease_renewed");
    } catch (err) {
      this.ports.counters.inc(`lease_renew_${err instanceof CustodyError ? err.code : "failed"}`);
      if (
        err instanceof ControlFenceError &&
        (err.code === ControlFenceCode.not_lease_holder || err.code === ControlFenceCode.stale_term)
      ) {
        const cur = leaseOf(this.ports.follower.state, this.volume);
        await this.depose(
          `its renewal was refused (${err.code}); ${cur?.holder ?? "nobody"} holds it at term ${cur?.term ?? 0}`,
        );
      }
    }
  }

  /** Claims the lease at `term` (`from`: whose it was) and, once committed, becomes active. */
  private async claim(term: number, from: string): Promise<void> {
    let seq: number;
    try {
      seq = (
        await commitControlEvent(this.ports.store, this.ports.follower, this.ports.identity, () => ({
          type: "claim_lease",
          volume: this.volume,
          term,
          renewMs: this.timings.renewMs,
          timeoutMs: this.timings.timeoutMs,
        }))
      ).seq;
    } catch (err) {
      this.ports.counters.inc(`lease_claim_${err instanceof CustodyError ? err.code : "failed"}`);
      return;
    }
    this.ports.counters.inc("lease_claimed");
    this.ports.log(
      `controller ${this.me}: claimed the control lease of ${this.volume} ` +
        `at term ${term} (seq ${seq}; was ${from}); active`,
    );
    try {
      await this.ports.becomeActive();
      this.roleNow = "active";
    } catch (err) {
      // Holding the lease without running the job would only delay a standby: claim again next tick.
      this.ports.counters.inc(`lease_start_${err instanceof CustodyError ? err.code : "failed"}`);
      this.ports.log(`controller ${this.me}: cannot start after claiming ${this.volume}: ${(err as Error).message}`);
    }
  }

  private async depose(why: string): Promise<void> {
    if (this.roleNow !== "active") return;
    this.roleNow = "standby";
    this.ports.counters.inc("lease_lost");
    this.ports.log(
      `controller ${this.me}: lost the control lease of ${this.volume} (${why}); ` +
        "stepping down to standby, committing nothing more",
    );
    await this.ports.stepDown();
  }

  /** Stops ticking (does not step down: the caller stops the controller). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.ticking;
  }
}
