/**
 * Public face of `actors/lane-arena/` for the holder: a lane's arena as a statechart (segments,
 * credits, pins, seal and the acceptance log), its synchronous ingress logic, its events and
 * views, and the spill writer that moves sealed segments to disk.
 */
export {
  laneArenaMachine,
  laneArenaIngressLogic,
  LaneArenaInputError,
  laneLogOf,
  type LaneArenaInput,
  type LaneArenaContext,
  type LaneArenaEvent,
  type LaneArenaEmitted,
  type LaneArenaView,
  type LaneLogView,
  type LaneSummary,
} from "./lane-arena.machine.ts";
export { SegmentSpillWriter, type SpillItem, type SpillRound } from "./lane-arena-spill.ts";
