import { assertEvent, assign, enqueueActions, fromPromise, raise, setup, type ActorRefFrom } from "xstate";
import { CustodyError } from "../../core/index.ts";
import { armTimer } from "../machine-timer.ts";
import type { HolderInbound } from "./holder-ports.ts";
import { laneArenaIngressLogic } from "../lane-arena/index.ts";
import type { HandoverReport } from "./holder-handover.ts";
import type { HolderConfig } from "./holder-config.ts";
import { initialHolderState, type HolderPlainState } from "./holder-state.ts";
import { evidenceDegrades, type EvidenceUpdate } from "./holder-step.ts";

/**
 * The Holder actor. Lifecycle: starting → serving ⇄ degraded_evidence → draining → retired.
 * Every inbound NATS message, timer and async completion arrives as an event of this one actor
 * (the single owner of the holder's inbound events). Its data is plain (`state`,
 * holder/holder-state.ts), changed by the pure steps of holder/holder-step.ts (`step`), whose
 * effects the executor runs; the events those steps do not take yet go to the lane runtime behind
 * the executor (`forward`, holder/holder-executor.ts). The executor is supplied by `startHolder`
 * with `holderMachine.provide(...)`: this machine alone touches no transport, clock, file or counter.
 * Timers are the machine's own delayed events, so a retired or stopped holder has none left. Each
 * lane it serves is backed by a lane-arena actor spawned as its child (`lane-arena:<volume>/<lane>`),
 * which owns that lane's segments, credits, pins, seal and acceptance log; the children stop when
 * the holder retires, and a child that fails leaves its lane refusing (`lane_arena_stopped`).
 *
 * - serving: units admitted within credits, forwarded at once, receipted in signed batches.
 * - degraded_evidence: protected-RAM evidence failed; protected receipts stop (the bound is checked
 *   for every receipt), custody is evacuated, and a violation is reported if the hold-up time ends first.
 * - draining: no new credit is promised; credited units are still admitted; custody ends only by
 *   release or transfer. Retires once nothing is retained.
 * - fenced: the control log admitted a newer incarnation of this holder (one identity, one
 *   process: issue #46). Checked on every refresh tick; the holder stops at once — no receipt,
 *   credit, forward, fetch or release after it — hands what it retains to the newer incarnation
 *   (holder/holder-handover.ts) and retires; its process exits (actors/runtime/run-holder.ts).
 */

/** Lifecycle states, as an enumeration. */
export const HolderState = {
  Starting: "starting",
  Serving: "serving",
  DegradedEvidence: "degraded_evidence",
  Draining: "draining",
  Retired: "retired",
  Fenced: "fenced",
} as const;
export type HolderState = (typeof HolderState)[keyof typeof HolderState];

/** What the machine is created with. */
export interface HolderMachineInput {
  readonly config: HolderConfig;
  /** How often retained coverage is re-announced (HolderPorts.receiptRefreshMs; default 500 ms). */
  readonly receiptRefreshMs?: number;
}

export interface HolderContext {
  /** The holder's own data, plain (no class instance, no closure). */
  readonly state: HolderPlainState;
  startError?: string;
  /** The newer incarnation the control log admitted, once this one is fenced by it. */
  fencedBy?: number;
  /** What the fenced holder handed to the newer incarnation, once done. */
  handover?: HandoverReport;
}

/**
 * Operator events (besides the inbound ones). New evidence comes with the RAM the holder had queued
 * and the time when it was sent (`startHolder`'s `updateEvidence` fills both in).
 */
export type HolderCommand = EvidenceUpdate | { type: "drain" } | { type: "retire" };

/** Raised by the machine to itself when it enters degraded_evidence (the evacuation's pure step). */
export type HolderInternal = { type: "evacuation.start" };

export type HolderEvent = HolderInbound | HolderCommand | HolderInternal;

/** A named action or actor of the machine that `startHolder` did not provide. */
export class HolderNotWiredError extends CustodyError {
  constructor(name: string) {
    super("holder_not_wired", `holder machine ${name} needs startHolder's executor (holderMachine.provide)`, { name });
  }
}

const unwired =
  (name: string) =>
  (_args: unknown, _params: undefined): never => {
    throw new HolderNotWiredError(name);
  };

/** XState's `spawn` as `assign` actions receive it, narrowed to lane arenas (the executor's `boot` and `forward`). */
export type LaneArenaSpawner = (
  src: "laneArena",
  options: { id: string; input: import("../lane-arena/index.ts").LaneArenaInput },
) => ActorRefFrom<typeof laneArenaIngressLogic>;

/** Events the pure steps take (holder/holder-step.ts); every other inbound event goes to `forward`. */
const stepped = { actions: "step" } as const;
const forwarded = { actions: "forward" } as const;

/**
 * What the holder takes from the moment it subscribes (while `starting` already: its subscriptions,
 * timers and lane arenas are live before it serves): NATS messages of its subjects, the connection,
 * its own timers and async completions, and a failed lane arena.
 */
const subscribed = {
  "nats.credit": stepped,
  "nats.receipt": stepped,
  "nats.release": stepped,
  "release.checked": stepped,
  "nats.transfer": stepped,
  "nats.fetch": stepped,
  "nats.audit": stepped,
  "nats.base": stepped,
  "transport.connection": stepped,
  "timer.arm": { actions: "armTimer" },
  "timer.receipts": stepped,
  "timer.refresh": [{ guard: "superseded", target: "#holder.fenced" }, stepped],
  "resend.loaded": stepped,
  "timer.seal": stepped,
  "timer.flush": stepped,
  "flush.completed": stepped,
  "xstate.error.actor.*": stepped,
} as const;

/**
 * What it takes once it has served (the handle `startHolder` returns exists only from then on): units
 * its credits admitted, new protected-RAM evidence, and the end of an evacuation's hold-up time (armed
 * in degraded_evidence, due in whatever state the holder is in by then).
 */
const served = {
  ...subscribed,
  "nats.units": forwarded,
  "evidence.update": stepped,
  "timer.evacuation": stepped,
} as const;

/** The machine's setup: its typed `assign`/`enqueueActions` are what the executor's implementations are built with. */
export const holderSetup = setup({
  types: {
    context: {} as HolderContext,
    events: {} as HolderEvent,
    input: {} as HolderMachineInput,
  },
  actors: {
    startCore: fromPromise<void>(async () => unwired("startCore")(undefined, undefined)),
    handOver: fromPromise<HandoverReport, { by: number }>(async () => unwired("handOver")(undefined, undefined)),
    laneArena: laneArenaIngressLogic,
  },
  actions: {
    /** Creates the lane runtime (and spawns its lane arenas as children); an `assign` for its `spawn`. */
    boot: unwired("boot"),
    /** Runs the pure step on the event: assigns its state, raises its timers, executes its other effects. */
    step: unwired("step"),
    /** Hands the event to the lane runtime (an `assign`: receipt batches it touched come back into `state`). */
    forward: unwired("forward"),
    stopCore: unwired("stopCore"),
    /** Stops serving at once but keeps the spill stream open for the handover. */
    quiesceCore: unwired("quiesceCore"),
    /** Counts the fence and records the incarnation that fenced this one (an `assign` of `fencedBy`). */
    recordFence: unwired("recordFence"),
    /** The lane runtime asked for a timer: the machine raises it to itself later (cancelled when the actor stops). */
    armTimer: armTimer<HolderContext, HolderEvent>(),
    stopLaneArenas: enqueueActions(({ self, enqueue }) => {
      for (const id of Object.keys(self.getSnapshot().children))
        if (id.startsWith("lane-arena:")) enqueue.stopChild(id);
    }),
    recordStartFailure: assign({ startError: ({ event }) => String((event as { error?: unknown }).error) }),
  },
  guards: {
    evidenceDegrades: ({ context, event }) => {
      assertEvent(event, "evidence.update");
      return evidenceDegrades(context.state, event);
    },
    evidenceHealthy: ({ context, event }) => {
      assertEvent(event, "evidence.update");
      return !evidenceDegrades(context.state, event);
    },
    /** Nothing is retained any more (as the lane runtime reported it at the end of the last event). */
    drained: ({ context }) => !context.state.retainsCustody,
    /** The control log admitted a newer incarnation of this holder (the peer directory). */
    superseded: unwired("superseded"),
  },
});

export const holderMachine = holderSetup.createMachine({
  id: "holder",
  initial: HolderState.Starting,
  context: ({ input }) => ({ state: initialHolderState(input.config, input.receiptRefreshMs) }),
  on: { retire: `.${HolderState.Retired}` },
  states: {
    [HolderState.Starting]: {
      entry: "boot",
      on: subscribed,
      invoke: {
        src: "startCore",
        onDone: HolderState.Serving,
        onError: { target: HolderState.Retired, actions: "recordStartFailure" },
      },
    },
    [HolderState.Serving]: {
      on: {
        ...served,
        "evidence.update": [{ guard: "evidenceDegrades", target: HolderState.DegradedEvidence, ...stepped }, stepped],
        drain: { target: HolderState.Draining, ...stepped },
      },
    },
    [HolderState.DegradedEvidence]: {
      entry: raise({ type: "evacuation.start" }),
      on: {
        ...served,
        "evacuation.start": stepped,
        "evidence.update": [{ guard: "evidenceHealthy", target: HolderState.Serving, ...stepped }, stepped],
        drain: { target: HolderState.Draining, ...stepped },
      },
    },
    [HolderState.Draining]: {
      always: { guard: "drained", target: HolderState.Retired },
      // Units already credited are still admitted (a granted promise is kept); evidence is kept, no state follows it.
      on: served,
    },
    [HolderState.Retired]: {
      type: "final",
      entry: ["stopCore", "stopLaneArenas"],
    },
    [HolderState.Fenced]: {
      entry: ["recordFence", "quiesceCore"],
      invoke: {
        src: "handOver",
        input: ({ context }) => ({ by: context.fencedBy! }),
        onDone: { target: HolderState.Retired, actions: assign({ handover: ({ event }) => event.output }) },
        onError: HolderState.Retired,
      },
      // Nothing it receives or was due to do counts any more (no receipt, credit, release or flush).
      on: { retire: HolderState.Retired, "*": {} },
    },
  },
});
