import { Arena } from "../../arena/index.ts";
import { systemClock } from "../../core/index.ts";
import { LaneLog } from "../../lanes/index.ts";
import { laneKey } from "../../lanes/index.ts";
import { LaneArenaSpill } from "./lane-arena-spill.ts";
import type { ArenaReport } from "../../arena/index.ts";
import type { LaneArenaInput, LaneLogView, LaneSummary } from "./lane-arena-events.ts";

/*
 * The lane arena actor's state, shared by its two forms: the statechart with spill and growth
 * regions (lane-arena.machine.ts) and the ingress-only actor a holder lane runs (lane-arena-ingress.ts).
 */

/** Snapshot context: the report is bytes by residency, pins by reason, outstanding credits. */
export interface LaneArenaContext {
  readonly arena: Arena;
  readonly spiller: LaneArenaSpill | undefined;
  readonly acquire: ((bytes: number) => Promise<boolean>) | undefined;
  readonly flushDeadlineMs: number;
  readonly logs: Map<string, LaneLog>;
  readonly summaries: boolean;
  readonly sealTimers: boolean;
  /** With `summaries` off: the report at start (read `arena` instead). */
  report: ArenaReport;
  lanes: Record<string, LaneSummary>;
  spillQueue: number[];
  spillInFlight: number[];
  flushDeadlineMisses: number;
  growthRefused: boolean;
}

/** The acceptance log of one lane of this actor, if it has one (read-only for the actor's owner). */
export function laneLogOf(context: LaneArenaContext, volume: string, lane: string): LaneLogView | undefined {
  return context.logs.get(laneKey(volume, lane));
}

export function summarize(log: LaneLog): LaneSummary {
  return {
    term: log.term,
    retained: log.retained.toJSON(),
    contiguousThrough: log.contiguousThrough(),
    holes: log.holes().toJSON(),
  };
}

export function laneLog(ctx: LaneArenaContext, volume: string, lane: string): LaneLog {
  const key = laneKey(volume, lane);
  let log = ctx.logs.get(key);
  if (!log) {
    log = new LaneLog(volume, lane);
    ctx.logs.set(key, log);
  }
  return log;
}

/** The arena's state from its input: the arena, its lane logs and the spill and growth bookkeeping. */
export const laneArenaContext = ({ input }: { input: LaneArenaInput }): LaneArenaContext => {
  const clock = input.clock ?? systemClock;
  const arena = input.arena ?? new Arena(input.config ?? {}, clock, input.counters);
  const logs = new Map<string, LaneLog>();
  for (const l of input.lanes ?? []) logs.set(laneKey(l.volume, l.lane), new LaneLog(l.volume, l.lane));
  return {
    arena,
    spiller: input.spill ? new LaneArenaSpill(arena, input.spill.files, input.spill.path, clock) : undefined,
    acquire: input.acquireIncrement,
    flushDeadlineMs: input.flushDeadlineMs ?? 200,
    logs,
    summaries: input.summaries ?? true,
    sealTimers: input.sealTimers ?? true,
    report: arena.report(),
    lanes: {},
    spillQueue: [],
    spillInFlight: [],
    flushDeadlineMisses: 0,
    growthRefused: false,
  };
};
