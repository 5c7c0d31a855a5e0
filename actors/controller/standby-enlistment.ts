import type { Clock, Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { HolderStatus, OPEN_END, type ControlEventBody, type ControlState } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import type { RepairPort } from "../repair/index.ts";
import type { ControllerConfig, StandbyHolder } from "./controller-config.ts";
import type { RepairLauncher } from "./controller-ports.ts";

/** What enlisting a standby needs from its controller. */
export interface StandbyEnlistmentDeps {
  readonly config: ControllerConfig;
  readonly launcher: RepairLauncher | undefined;
  readonly counters: Counters;
  readonly clock: Clock;
  /** The newest folded control-log state. */
  controlState(): ControlState;
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }>;
  /**
   * Commits the admission and the responsibility transfers (`prepare_transfer` + `activate_replacement`), as repairs
   * do.
   */
  readonly port: Pick<RepairPort, "admit" | "activate">;
  /** Standbys a failure repair has taken (never enlisted here as well). */
  taken(): ReadonlySet<string>;
  /** A standby was admitted (or the attempt ended): evaluate again soon. */
  nudge(): void;
}

/** Retry intervals a standby whose launch failed is passed over while another candidate remains. */
const PASS_OVER_RETRIES = 10;

/**
 * Brings a standby holder into service when a required scenario has a coverage gap and no admitted
 * holder can take the copy: every holder that would survive the scenario has already released
 * those sequences (a released range never comes back to the same holder), is audited unproven, or
 * is gone. The case it exists for: three RAM holders release down to one protected-RAM copy, then
 * that copy's hold-up evidence degrades — the memo asks to evacuate while protection lasts, and
 * without a fresh holder there is nowhere to go. It starts the first standby (`repair.standby`,
 * in order) that was never admitted, is not a failure repair's replacement and sits where the
 * scenario's losses do not reach, commits its admission, and makes it responsible for the lane
 * from the gap's first sequence on (transfers from the holders responsible for it), so it can
 * release what it is sent once the policies allow and others can release relying on it; coverage
 * repair's next pass copies the gap to it. One standby at a time; a failed attempt is retried
 * after `retryMs`.
 */
export class StandbyEnlistment {
  private enlisting: string | undefined;
  private failedAt = -Infinity;
  /** When each standby's launcher last failed to bring it (see `pick`). */
  private readonly launchFailedAt = new Map<string, number>();

  constructor(
    private readonly d: StandbyEnlistmentDeps,
    private readonly retryMs: number,
  ) {}

  /** Standbys being enlisted now (a failure repair must not pick them). */
  get reserved(): ReadonlySet<string> {
    return new Set(this.enlisting === undefined ? [] : [this.enlisting]);
  }

  /**
   * Starts enlisting a standby for `gap` of `lane` at a site `survives` accepts, unless one is on its way. Never
   * throws.
   */
  enlist(lane: string, gap: RangeSet, survives: (site: string) => boolean): void {
    if (this.enlisting !== undefined || this.d.clock.now() - this.failedAt < this.retryMs) return;
    const cfg = this.d.config.repair;
    if (cfg === undefined || this.d.launcher === undefined) {
      this.d.counters.inc("coverage_enlist_unconfigured");
      return;
    }
    const s = this.d.controlState();
    const taken = this.d.taken();
    const siteOf = (c: StandbyHolder) => this.d.config.topology.holderSites[c.holderId] ?? c.site;
    const standby = this.pick(
      cfg.standby.filter((c) => s.holders[c.holderId] === undefined && !taken.has(c.holderId) && survives(siteOf(c))),
    );
    if (standby === undefined) {
      this.d.counters.inc("coverage_enlist_no_standby");
      return;
    }
    this.enlisting = standby.holderId;
    this.d.counters.inc("coverage_enlist_started");
    void this.start(standby, this.d.launcher, lane, RangeSet.of(gap.min ?? 1, OPEN_END));
  }

  /**
   * Finishes an enlistment a controller died in the middle of (a standby admitted, not yet made
   * responsible — it would take copies it could never release): an admitted standby that is not
   * being enlisted, is not a failure repair's replacement, and is responsible for nothing and has
   * released nothing on a lane is made responsible for that lane from its first sequence on. Called
   * every round; one at a time; never throws.
   */
  resume(): void {
    const cfg = this.d.config.repair;
    if (cfg === undefined || this.enlisting !== undefined || this.d.clock.now() - this.failedAt < this.retryMs) return;
    const s = this.d.controlState();
    const taken = this.d.taken();
    for (const c of cfg.standby) {
      if (s.holders[c.holderId]?.status !== HolderStatus.active || taken.has(c.holderId)) continue;
      for (const lane of this.d.config.topology.lanes) {
        const o = s.obligations[obligationIdOf(this.d.config.topology.volume, lane)];
        if (
          o === undefined ||
          !(o.responsible[c.holderId]?.isEmpty ?? true) ||
          !(o.released[c.holderId]?.isEmpty ?? true)
        )
          continue;
        this.enlisting = c.holderId;
        this.d.counters.inc("coverage_enlist_resumed");
        void this.run(() => this.makeResponsible(c.holderId, lane, RangeSet.of(1, OPEN_END)));
        return;
      }
    }
  }

  /**
   * The first candidate (in configured order) whose launch has not failed in the last
   * PASS_OVER_RETRIES retry intervals — a standby whose process is down must not block the next
   * one — else the one that failed longest ago.
   */
  private pick(candidates: readonly StandbyHolder[]): StandbyHolder | undefined {
    const now = this.d.clock.now();
    const fresh = candidates.find(
      (c) => now - (this.launchFailedAt.get(c.holderId) ?? -Infinity) >= PASS_OVER_RETRIES * this.retryMs,
    );
    return (
      fresh ??
      [...candidates].sort((a, b) => this.launchFailedAt.get(a.holderId)! - this.launchFailedAt.get(b.holderId)!)[0]
    );
  }

  private start(standby: StandbyHolder, launcher: RepairLauncher, lane: string, from: RangeSet): Promise<void> {
    return this.run(async () => {
      let a;
      try {
        a = await launcher.prepare(standby);
      } catch (err) {
        this.launchFailedAt.set(standby.holderId, this.d.clock.now());
        throw err;
      }
      await this.d.port.admit(a);
      await this.makeResponsible(a.holderId, lane, from);
    });
  }

  /**
   * Makes `holder` responsible for `from` of `lane` like a member of it: one transfer per holder
   * responsible for part of it (`enlist-<holder>-<lane>-<donor>`; one a crash left prepared is
   * activated, one already active skipped).
   */
  private async makeResponsible(holder: string, lane: string, from: RangeSet): Promise<void> {
    const s = this.d.controlState();
    let rest = from;
    const responsible = s.obligations[obligationIdOf(this.d.config.topology.volume, lane)]?.responsible ?? {};
    for (const [donor, ranges] of Object.entries(responsible).sort(([x], [y]) => (x < y ? -1 : 1))) {
      const part = ranges.intersect(rest);
      if (part.isEmpty || donor === holder) continue;
      const transferId = `enlist-${holder}-${lane}-${donor}`;
      const t = s.transfers[transferId];
      if (t?.status === "prepared") await this.d.commit(() => ({ type: "activate_replacement", transferId }));
      else if (t === undefined)
        await this.d.port.activate({ transferId, lane, fromHolder: donor, toHolder: holder, ranges: part });
      rest = rest.subtract(part);
    }
    this.d.counters.inc("coverage_enlisted");
  }

  private async run(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (err) {
      this.failedAt = this.d.clock.now();
      this.d.counters.inc(`coverage_enlist_${err instanceof CustodyError ? err.code : "failed"}`);
    } finally {
      this.enlisting = undefined;
      this.d.nudge();
    }
  }
}
