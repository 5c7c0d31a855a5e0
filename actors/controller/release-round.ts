import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { commitControlEvent } from "../../custody/index.ts";
import type { ControlEventBody, ControllerIdentity, ControlLogFollower, ControlState } from "../../custody/index.ts";
import { authorizeReleases, releaseEventFor, type EvaluationState, type ReleaseRequest } from "../../policies/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import type { ControllerConfig } from "./controller-config.ts";
import { MAX_AUDITS, type ControllerPorts, type ReleaseAudit } from "./controller-ports.ts";
import type { holdsAsPolicy } from "./evaluation-input.ts";
import type { ControllerEffect } from "./controller-effects.ts";
import { planReleases, type ReleaseMemory } from "./release-plan.ts";

/** What a release round needs of its controller. */
export interface ReleaseRoundDeps {
  readonly config: ControllerConfig;
  readonly ports: ControllerPorts;
  readonly counters: Counters;
  readonly follower: ControlLogFollower;
  readonly volume: string;
  readonly identity: () => ControllerIdentity;
  readonly publishFrontier: (s: ControlState, obligationId: string, holder: string, lane: string) => void;
  /** What the decisions remember, as the machine holds it. */
  readonly memory: () => ReleaseMemory;
  /** Tells the machine the durable holders now known and each committed release. */
  readonly note: (
    e:
      | { type: "releases.planned"; durable: readonly string[] }
      | { type: "release.committed"; holder: string; nowMs: number },
  ) => void;
  readonly execute: (e: ControllerEffect) => void;
}

/**
 * A controller's releases, one round per evaluation: the decision is `planReleases` (pure, over the
 * plain memory the machine keeps), then the commit and frontier of each granted release, in order,
 * with the most recent ones kept as audits; each commit goes back to the machine (`release.committed`).
 */
export class ReleaseRound {
  /**
   * The most recent committed releases with the exact state each was decided on (at most
   * `MAX_AUDITS`, for tests and operators). The durable record of every release is its
   * `release_ranges` event in the control log (holder, ranges, the holders it relied on).
   */
  readonly audits: ReleaseAudit[] = [];

  constructor(private readonly deps: ReleaseRoundDeps) {}

  /**
   * Asks for the releases due, decides them jointly and commits each granted one, publishing its
   * new frontier; denials are counted by reason. Returns the control state after the commits.
   */
  async run(
    s: ControlState,
    state: EvaluationState,
    held: ReturnType<typeof holdsAsPolicy>,
    now: number,
  ): Promise<ControlState> {
    const { config, ports } = this.deps;
    const plan = planReleases(
      this.deps.memory(),
      config,
      s,
      state,
      held,
      now,
      ports.authorizeReleases ?? authorizeReleases,
    );
    this.deps.note({ type: "releases.planned", durable: plan.durable });
    for (const e of plan.effects) this.deps.execute(e);
    const granted = [...plan.granted];
    for (const req of granted) s = await this.commitOne(s, state, granted, req, now);
    return s;
  }

  /** Commits one granted release and publishes its frontier; a refused commit is counted by code. */
  private async commitOne(
    s: ControlState,
    state: EvaluationState,
    granted: ReleaseRequest[],
    req: ReleaseRequest,
    now: number,
  ): Promise<ControlState> {
    const { ports, counters, follower } = this.deps;
    const obligationId = obligationIdOf(this.deps.volume, req.lane);
    try {
      const { seq, state: next } = await commitControlEvent(ports.store, follower, this.deps.identity(), (cur) =>
        this.releaseBody(cur, obligationId, req, state),
      );
      this.audits.push({ state, grantedTogether: granted, request: req, controlSeq: seq });
      if (this.audits.length > MAX_AUDITS) this.audits.splice(0, this.audits.length - MAX_AUDITS);
      counters.inc("release_committed");
      this.deps.note({ type: "release.committed", holder: req.holder, nowMs: now });
      this.deps.publishFrontier(next, obligationId, req.holder, req.lane);
      return next;
    } catch (err) {
      counters.inc(`release_${err instanceof CustodyError ? err.code : "failed"}`);
      return s;
    }
  }

  /** The release event body (`releaseEventFor`), or a throw (abstain) when no active, responsible holder backs it. */
  private releaseBody(
    cur: ControlState,
    obligationId: string,
    req: ReleaseRequest,
    state: EvaluationState,
  ): ControlEventBody {
    const { body, narrowed } = releaseEventFor(cur, obligationId, req, state);
    if (narrowed) this.deps.counters.inc("release_narrowed");
    return body;
  }
}
