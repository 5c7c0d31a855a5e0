import type { Counters } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";
import { commitControlEvent } from "../custody/index.ts";
import type { ControlEventBody } from "../custody/index.ts";
import { ControlLogFollower } from "../custody/index.ts";
import type { InMemoryControlLog } from "../custody/index.ts";
import { HoldKind } from "../custody/index.ts";
import { RangeSet } from "../lanes/index.ts";
import type { EventTrace } from "./event-trace.ts";
import type { FaultEvent } from "./fault-schedule.ts";
import { SIM_EPOCH_MS } from "./sim-host.ts";
import type { SimulatedClock } from "./simulated-clock.ts";

/**
 * The world's operator (host agents, failure declarations, holds): commits to the control log one at a
 * time, retrying a lost race a few times; a refused commit is counted as `operator_<code>`.
 */
export class OperatorDesk {
  private readonly follower: ControlLogFollower;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: InMemoryControlLog,
    private readonly clock: SimulatedClock,
    private readonly trace: EventTrace,
    private readonly counters: Counters,
  ) {
    this.follower = new ControlLogFollower(store);
  }

  /**
   * Places hold `holdId` (`hold_ranges`) over `first`..`last` of (volume, lane) at `holders` (every
   * holder when empty). A PITR pin is ended by the operator's `end_hold` after `durationMs`; a
   * recovery hold carries its end (`untilMs`) and the controller ends it once that has passed.
   */
  placeHold(f: Extract<FaultEvent, { kind: "hold" }>, holdId: string, volume: string, lane: string): void {
    const recovery = f.holdKind === HoldKind.recovery;
    const untilMs = recovery ? this.clock.now() + f.durationMs : 0;
    const ranges = RangeSet.of(f.first, f.last);
    void this.commit(`hold ${holdId}`, () => ({
      type: "hold_ranges",
      holdId,
      kind: f.holdKind,
      volume,
      lane,
      ranges,
      holders: [...f.holders],
      untilMs,
      by: "sim operator",
    }));
    if (!recovery)
      this.clock.schedule(
        () => void this.commit(`end ${holdId}`, () => ({ type: "end_hold", holdId, reason: "pin no longer needed" })),
        f.durationMs,
        "end-hold",
      );
  }

  /** Commits `body` (built against the current log) after every earlier operator commit. */
  commit(what: string, body: () => ControlEventBody): Promise<void> {
    const run = async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          await commitControlEvent(this.store, this.follower, { controller: "operator", clock: this.clock }, () =>
            body(),
          );
          this.trace.record({
            atMs: this.clock.now() - SIM_EPOCH_MS,
            kind: "operator",
            actor: "operator",
            detail: { what },
          });
          return;
        } catch (err) {
          const code = err instanceof CustodyError ? err.code : "error";
          if (code === "control_conflict" && attempt < 10) continue;
          this.counters.inc(`operator_${code}`);
          if (!(err instanceof CustodyError)) throw err;
          return;
        }
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }
}
