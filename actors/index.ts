/** Public surface of `actors/` (each machine's module adds its own line). */
export {
  laneArenaMachine,
  type LaneArenaInput,
  type LaneArenaContext,
  type LaneArenaEvent,
  type LaneArenaEmitted,
  type LaneSummary,
} from "./lane-arena.machine.ts";
