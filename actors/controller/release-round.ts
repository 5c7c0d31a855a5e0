import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { commitControlEvent, HolderStatus } from "../../custody/index.ts";
import type { ControlEventBody, ControllerIdentity, ControlLogFollower, ControlState } from "../../custody/index.ts";
import {
  authorizeReleases,
  releaseEventFor,
  Residency,
  type EvaluationState,
  type ReleaseRequest,
} from "../../policies/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import { releasableHolders, type ControllerConfig } from "./controller-config.ts";
import { MAX_AUDITS, type ControllerPorts, type ReleaseAudit } from "./controller-ports.ts";
import { releaseCandidates, type holdsAsPolicy } from "./evaluation-input.ts";

/** What a release round needs of its controller. */
export interface ReleaseRoundDeps {
  readonly config: ControllerConfig;
  readonly ports: ControllerPorts;
  readonly counters: Counters;
  readonly follower: ControlLogFollower;
  readonly volume: string;
  readonly identity: () => ControllerIdentity;
  readonly publishFrontier: (s: ControlState, obligationId: string, holder: string, lane: string) => void;
}

/**
 * A controller's releases, one round per evaluation: which holders are due (each at most every
 * `releaseEveryMs`), which are durable (configured, or seen with a disk claim: released only onto
 * disk or a base), the joint decision, and the commit and frontier of each granted release, with
 * the most recent ones kept as audits.
 */
export class ReleaseRound {
  /**
   * The most recent committed releases with the exact state each was decided on (at most
   * `MAX_AUDITS`, for tests and operators). The durable record of every release is its
   * `release_ranges` event in the control log (holder, ranges, the holders it relied on).
   */
  readonly audits: ReleaseAudit[] = [];
  /** When each holder's last release was committed (releaseEveryMs). */
  private readonly lastReleaseAt = new Map<string, number>();
  /** Holders configured or seen persisting (a disk claim). */
  private readonly durableHolders: Set<string>;

  constructor(private readonly deps: ReleaseRoundDeps) {
    this.durableHolders = new Set(deps.config.topology.durable ?? []);
  }

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
    const { config, ports, counters } = this.deps;
    for (const h of state.holders)
      if (h.claims.some((c) => c.residency === Residency.disk)) this.durableHolders.add(h.id);
    const every = config.releaseEveryMs ?? 1_000;
    const due = (h: string) =>
      s.holders[h]?.status === HolderStatus.active && now - (this.lastReleaseAt.get(h) ?? -Infinity) >= every;
    const requests: ReleaseRequest[] = releaseCandidates(
      state,
      releasableHolders(config).filter(due),
      this.durableHolders,
      held,
    );
    const decisions = requests.length > 0 ? (ports.authorizeReleases ?? authorizeReleases)(state, requests) : [];
    const granted = decisions.filter((d) => d.allowed).map((d) => d.request);
    for (const d of decisions) {
      if (d.allowed) continue;
      counters.inc("release_denied");
      for (const r of new Set(d.reasons)) counters.inc(`release_denied.${r}`);
    }
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
      this.lastReleaseAt.set(req.holder, now);
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
