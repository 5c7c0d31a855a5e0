import { fromPromise, setup } from "xstate";
import { SegmentStateError } from "../../arena/index.ts";
import { laneArenaContext, type LaneArenaContext } from "./lane-arena-context.ts";
import { ingressHandlerOf, ingressHandlers } from "./lane-arena-ingress.ts";
import type { LaneArenaSpill, SpillOutcome } from "./lane-arena-spill.ts";
import type { LaneArenaEmitted, LaneArenaEvent, LaneArenaInput } from "./lane-arena-events.ts";

export type {
  LaneArenaInput,
  LaneSummary,
  LaneArenaView,
  LaneLogView,
  LaneArenaEvent,
  LaneArenaEmitted,
} from "./lane-arena-events.ts";
export { laneLogOf, type LaneArenaContext } from "./lane-arena-context.ts";
export { laneArenaIngressLogic, LaneArenaInputError } from "./lane-arena-ingress.ts";

const base = setup({
  types: {
    context: {} as LaneArenaContext,
    events: {} as LaneArenaEvent,
    input: {} as LaneArenaInput,
    emitted: {} as LaneArenaEmitted,
  },
  actors: {
    /** Writes a batch to the spill stream and flushes it against the deadline. */
    flushSpill: fromPromise<SpillOutcome, { spiller: LaneArenaSpill; segmentIds: number[]; deadlineMs: number }>(
      ({ input }) => input.spiller.spill(input.segmentIds, input.deadlineMs),
    ),
    /** Asks the capacity source for the next increment. */
    acquireIncrement: fromPromise<boolean, { acquire: (bytes: number) => Promise<boolean>; bytes: number }>(
      ({ input }) => input.acquire(input.bytes),
    ),
  },
  guards: {
    spillQueued: ({ context }) => context.spiller !== undefined && context.spillQueue.length > 0,
    shouldGrow: ({ context }) =>
      context.acquire !== undefined && !context.growthRefused && context.arena.wantsIncrement(),
  },
  delays: {
    maxOpenDelay: ({ context }) => context.arena.config.maxOpenDelayMs,
  },
});

/**
 * Every ingress event, handled by its handler in lane-arena-ingress.ts (the one routing table both
 * forms of the actor use): answers, timers and snapshot fields go through `enqueue`.
 */
const ingress = base.enqueueActions(({ context, event, enqueue }) =>
  ingressHandlerOf(event.type)?.(context, event, {
    emit: (e) => enqueue.emit(e),
    sealDue: (e) => enqueue.raise(e, { delay: "maxOpenDelay", id: `seal-${e.segmentId}` }),
    cancelSeal: (segmentId) => enqueue.cancel(`seal-${segmentId}`),
    assign: (patch) => enqueue.assign(patch),
  }),
);

const withActions = base.extend({
  actions: {
    ingress,
    /** Queues segments to spill (explicit ids, or the oldest candidates until RAM is under target). */
    queueSpill: base.enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "spill" && event.type !== "pressure") return;
      if (!context.spiller) {
        const err = new SegmentStateError("this arena has no spill target (RAM-only holder)", {});
        context.arena.counters.inc("no_spill_target");
        return enqueue.emit({
          type: "rejected",
          request: event.type,
          code: "no_spill_target",
          message: err.message,
          stage: "check",
        });
      }
      const busy = new Set([...context.spillQueue, ...context.spillInFlight]);
      let ids: number[];
      if (event.type === "spill" && event.segmentIds) ids = event.segmentIds.filter((id) => !busy.has(id));
      else {
        const target = event.type === "pressure" ? (event.targetRamBytes ?? 0) : 0;
        let ram = context.arena.report().ramBytes - busy.size * context.arena.config.segmentBytes;
        ids = [];
        for (const id of context.arena.spillCandidates()) {
          if (ram <= target) break;
          if (busy.has(id)) continue;
          ids.push(id);
          ram -= context.arena.config.segmentBytes;
        }
      }
      enqueue.assign({ spillQueue: [...context.spillQueue, ...ids] });
    }),
    takeSpillBatch: base.assign(({ context }) => ({ spillInFlight: context.spillQueue, spillQueue: [] })),
    applySpill: base.enqueueActions(({ context, event, enqueue }) => {
      const outcome = (event as unknown as { output: SpillOutcome }).output;
      if (outcome.kind === "spilled") enqueue.emit({ type: "spilled", segmentIds: outcome.segmentIds });
      else
        enqueue.emit({ type: "flushDeadlineMissed", segmentIds: outcome.segmentIds, deadlineMs: outcome.deadlineMs });
      enqueue.assign({
        spillInFlight: [],
        flushDeadlineMisses: context.flushDeadlineMisses + (outcome.kind === "deadline_missed" ? 1 : 0),
        report: context.arena.report(),
      });
    }),
    spillFailed: base.enqueueActions(({ context, event, enqueue }) => {
      context.arena.counters.inc("spill_failed");
      enqueue.emit({ type: "spillFailed", message: String((event as unknown as { error: unknown }).error) });
      enqueue.assign({ spillInFlight: [], report: context.arena.report() });
    }),
    secureIncrement: base.enqueueActions(({ context, event, enqueue }) => {
      const granted = (event as unknown as { output: boolean }).output;
      if (granted === true && context.arena.capacityBytes < context.arena.config.hardLimitBytes) {
        const capacityBytes = context.arena.secureIncrement();
        enqueue.emit({ type: "grown", capacityBytes });
        enqueue.assign({ report: context.arena.report() });
      } else {
        enqueue.emit({ type: "growthRefused", capacityBytes: context.arena.capacityBytes });
        enqueue.assign({ growthRefused: true });
      }
    }),
    growthFailed: base.enqueueActions(({ context, enqueue }) => {
      enqueue.emit({ type: "growthRefused", capacityBytes: context.arena.capacityBytes });
      enqueue.assign({ growthRefused: true });
    }),
    clearGrowthRefusal: base.assign({ growthRefused: false }),
  },
});

/** Ingress, handled in order whatever the spill and growth regions are doing. */
const laneArenaIngress = Object.fromEntries(
  Object.keys(ingressHandlers).map((type) => [type, { actions: "ingress" as const }]),
) as {
  [K in keyof typeof ingressHandlers]: { actions: "ingress" };
};

/**
 * The LaneArena actor: owns one arena's lifecycle. Ingress (admit, grant, seal, pin, release,
 * export/import) is handled in order on one region; spilling (write + deadline-bounded flush) and
 * capacity growth run as invoked promises in two parallel regions so admission never waits on disk.
 * Every refusal is a typed `rejected` emission, counted in `context.arena.counters`, with no state
 * change. Seal delays use the actor's clock (`createActor(machine, { clock, input })`). Every holder
 * lane runs one — the ingress-only actor of lane-arena-ingress.ts, since a holder spills, secures
 * capacity and times its seals itself —
 * as a child of the holder actor (holder-lane.ts), which sends it every change to the lane's
 * segments, credits, pins and log and reads the answer from what it emits within that send.
 */
export const laneArenaMachine = withActions.createMachine({
  id: "laneArena",
  type: "parallel",
  context: laneArenaContext,
  on: laneArenaIngress,
  states: {
    spill: {
      initial: "idle",
      states: {
        idle: {
          always: { guard: "spillQueued", target: "flushing" },
          on: { spill: { actions: "queueSpill" }, pressure: { actions: "queueSpill" } },
        },
        flushing: {
          entry: "takeSpillBatch",
          on: { spill: { actions: "queueSpill" }, pressure: { actions: "queueSpill" } },
          invoke: {
            src: "flushSpill",
            input: ({ context }) => ({
              spiller: context.spiller!,
              segmentIds: context.spillInFlight,
              deadlineMs: context.flushDeadlineMs,
            }),
            onDone: { target: "idle", actions: "applySpill" },
            onError: { target: "idle", actions: "spillFailed" },
          },
        },
      },
    },
    growth: {
      initial: "idle",
      states: {
        idle: {
          always: { guard: "shouldGrow", target: "acquiring" },
          on: { grow: { actions: "clearGrowthRefusal" } },
        },
        acquiring: {
          invoke: {
            src: "acquireIncrement",
            input: ({ context }) => ({ acquire: context.acquire!, bytes: context.arena.config.incrementBytes }),
            onDone: { target: "idle", actions: "secureIncrement" },
            onError: { target: "idle", actions: "growthFailed" },
          },
        },
      },
    },
  },
});
