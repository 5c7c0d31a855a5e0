import {
  ControlFenceError,
  HolderStatus,
  persistenceChoiceOf,
  type ControlEventBody,
  type ControlState,
} from "../../custody/index.ts";
import { choosePersistenceTargets, type EvaluationState } from "../../policies/index.ts";
import type { Counters } from "../../core/index.ts";
import type { ControllerConfig } from "./controller-config.ts";

/**
 * What the chooser needs of its controller (`commit` runs inside the evaluation round, so it must not wait for the
 * round).
 */
export interface PersistenceTargetChooserPorts {
  readonly counters: Counters;
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }>;
}

/**
 * Keeps each lane's persistence targets in the control log current: after an evaluation round it
 * chooses them for the required scenarios (policies/persistence-targets.ts) and commits a
 * `choose_persistence` when they differ from the log's (a target failed, a candidate came back).
 * The first choice of a lane applies to every sequence; a later one from the next unacknowledged
 * sequence on, so sequences already in flight keep every holder that was persisting them. When no
 * scenario needs a persisted copy any more, the choice is withdrawn (everyone flushes again).
 */
export class PersistenceTargetChooser {
  constructor(
    private readonly config: Pick<ControllerConfig, "topology" | "persistenceTargets">,
    private readonly ports: PersistenceTargetChooserPorts,
  ) {}

  /** One pass over the volume's lanes against the log state `s` and the round's evaluation `state`. */
  async step(s: ControlState, state: EvaluationState): Promise<ControlState> {
    const cfg = this.config.persistenceTargets;
    if (cfg === undefined) return s;
    const topo = this.config.topology;
    const active = (id: string) => s.holders[id]?.status === HolderStatus.active;
    const laneHolders = Object.fromEntries(Object.entries(topo.holderSites).filter(([id]) => active(id)));
    const scenarios = [
      ...topo.scenarios.filter((x) => x.required),
      ...topo.timelines
        .filter((x) => x.required)
        .map((x) => ({ name: x.name, losses: x.events.flatMap((e) => e.losses) })),
    ];
    for (const lane of topo.lanes) {
      const current = persistenceChoiceOf(s.persistence, topo.volume, lane);
      const chosen = choosePersistenceTargets({
        sites: state.sites,
        laneHolders,
        candidates: cfg.candidates.filter(active),
        scenarios,
        copies: cfg.copies,
        current: current?.targets,
      });
      if (chosen.uncovered.length > 0)
        this.ports.counters.inc("persistence_uncovered_scenario", chosen.uncovered.length);
      const targets = chosen.covered.length > 0 ? chosen.targets : [];
      if (targets.join(",") === (current?.targets ?? []).join(",")) continue;
      const fromSeq = current === undefined ? 0 : (state.source.lanes[lane] ?? 0) + 1;
      try {
        s = (
          await this.ports.commit(() => ({
            type: "choose_persistence",
            volume: topo.volume,
            lane,
            fromSeq,
            targets,
            scenarios: chosen.covered,
          }))
        ).state;
        this.ports.counters.inc("persistence_choice_committed");
      } catch (err) {
        this.ports.counters.inc(`persistence_choice_${err instanceof ControlFenceError ? err.code : "failed"}`);
      }
    }
    return s;
  }
}
