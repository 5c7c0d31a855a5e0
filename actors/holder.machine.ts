import { assertEvent, assign, enqueueActions, fromPromise, setup, type ActorRefFrom } from "xstate";
import { armTimer } from "./machine-timer.ts";
import { HolderCore } from "./holder/holder-core.ts";
import type { HolderInbound, HolderPorts } from "./holder/holder-ports.ts";
import { HolderCustodyMoves } from "./holder/holder-custody-moves.ts";
import { laneArenaIngressLogic } from "./lane-arena.machine.ts";
import type { LaneArenaInput } from "./lane-arena-events.ts";
import type { SpawnLaneArena } from "./holder/holder-lane.ts";
import { answerFetch } from "./holder/fetch-service.ts";
import { answerAudit } from "./holder/audit-responder.ts";
import { handOver, type HandoverReport } from "./holder/holder-handover.ts";
import type { HolderConfig, ProtectedRamEvidence } from "./holder/holder-config.ts";
import { protectionStatus, ProtectionStatus } from "../policies/index.ts";

/**
 * The Holder actor. Lifecycle: starting → serving ⇄ degraded_evidence → draining → retired.
 * Every inbound NATS message, timer and async completion arrives as an event of this one actor
 * (the single owner of the holder's inbound events); named actions hand it to the core. Timers are
 * the machine's own delayed events: the core asks for one with `timer.arm` and the machine raises
 * it to itself later, so a retired or stopped holder has none left. Each lane
 * it serves is backed by a lane-arena actor spawned as its child (`lane-arena:<volume>/<lane>`),
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
  readonly ports: HolderPorts;
}

export interface HolderContext {
  readonly core: HolderCore;
  readonly moves: HolderCustodyMoves;
  startError?: string;
  /** The newer incarnation the control log admitted, once this one is fenced by it. */
  fencedBy?: number;
  /** What the fenced holder handed to the newer incarnation, once done. */
  handover?: HandoverReport;
}

/** Operator events (besides the core's own inbound events). */
export type HolderCommand =
  { type: "evidence.update"; evidence: ProtectedRamEvidence } | { type: "drain" } | { type: "retire" };

export type HolderEvent = HolderInbound | HolderCommand;

/**
 * Runs one action body. A bug or an unexpected input must never stop the holder (an XState actor
 * stops on a throwing action, and with it every custody promise): the error is counted as
 * `internal_error.<code>` and reported, and the actor keeps serving.
 */
function guarded(context: HolderContext, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    const code = (err as { code?: unknown })?.code;
    context.core.counters.inc(`internal_error.${typeof code === "string" ? code : "unexpected"}`);
    context.core.note({ type: "rejected", code: `internal_error.${typeof code === "string" ? code : String(err)}` });
  }
}

/** XState's `spawn` as the context factory and `assign` actions receive it, narrowed to lane arenas. */
type Spawner = (
  src: "laneArena",
  options: { id: string; input: LaneArenaInput },
) => ActorRefFrom<typeof laneArenaIngressLogic>;

/**
 * Spawns lane arenas as children of the holder actor. Each starts at once (XState would start it
 * after the current transition): the holder stores into a lane in the same step that admits it.
 */
function laneSpawner(spawn: Spawner): SpawnLaneArena {
  return (id, input) => {
    const ref = spawn("laneArena", { id, input });
    ref.start();
    return ref;
  };
}

/** The incarnation of this holder the control log admitted last, as its peer directory knows it. */
function admittedIncarnation(core: HolderCore): number | undefined {
  return core.io.peers.incarnation(core.config.holderId);
}

function degradedBy(core: HolderCore, e: ProtectedRamEvidence): boolean {
  const p = core.config.protectedRam;
  if (!p) return false;
  let queued = 0;
  for (const hl of core.lanes.values()) queued += hl.ramStoredBytes();
  return protectionStatus(e, queued, core.io.clock.now(), p) !== ProtectionStatus.Ok;
}

export const holderMachine = setup({
  types: {
    context: {} as HolderContext,
    events: {} as HolderEvent,
    input: {} as HolderMachineInput,
  },
  actors: {
    startCore: fromPromise(async ({ input }: { input: { core: HolderCore } }) => input.core.start()),
    handOver: fromPromise(async ({ input }: { input: { core: HolderCore; by: number } }) =>
      handOver(input.core, input.by),
    ),
    laneArena: laneArenaIngressLogic,
  },
  actions: {
    admitUnits: ({ context, event }) => {
      assertEvent(event, "nats.units");
      for (const msg of event.msgs) guarded(context, () => context.core.handleUnit(event.lane, msg));
    },
    applyGrant: ({ context, event }) => {
      assertEvent(event, "nats.credit");
      guarded(context, () => context.core.handleCredit(event.lane, event.edge, event.msg));
    },
    applyReceipt: ({ context, event }) => {
      assertEvent(event, "nats.receipt");
      guarded(context, () => context.core.handleReceipt(event.lane, event.msg));
    },
    applyReleaseFrontier: ({ context, event }) => {
      assertEvent(event, "nats.release");
      guarded(context, () => context.core.handleRelease(event.msg));
    },
    applyCheckedRelease: ({ context, event }) => {
      assertEvent(event, "release.checked");
      guarded(context, () => context.core.releaseChecked(event.lane, event.holder, event.ranges));
    },
    /** An `assign` only for its `spawn`: an offer for a lane not served yet spawns that lane's arena actor. */
    admitTransferOffer: assign(({ context, event, spawn }) => {
      assertEvent(event, "nats.transfer");
      guarded(context, () => context.moves.handleOffer(event.msg, laneSpawner(spawn as Spawner)));
      return {};
    }),
    /**
     * A lane's arena actor failed: its lane refuses from now on (typed `lane_arena_stopped`); the holder keeps serving.
     */
    noteLaneArenaFailure: ({ context, event }) => {
      const id = event.type.slice("xstate.error.actor.".length);
      context.core.counters.inc("lane_arena_failed");
      context.core.note({ type: "rejected", code: `lane_arena_failed.${id}` });
    },
    stopLaneArenas: enqueueActions(({ context, enqueue }) => {
      for (const hl of context.core.lanes.values()) enqueue.stopChild(hl.arenaActor);
    }),
    connectionChanged: ({ context, event }) => {
      assertEvent(event, "transport.connection");
      guarded(context, () => context.core.connectionChanged(event.event));
    },
    noteBase: ({ context, event }) => {
      assertEvent(event, "nats.base");
      guarded(context, () => context.core.handleBase(event.msg));
    },
    serveFetch: ({ context, event }) => {
      assertEvent(event, "nats.fetch");
      guarded(context, () => answerFetch(context.core, event.msg));
    },
    answerAudit: ({ context, event }) => {
      assertEvent(event, "nats.audit");
      guarded(context, () => answerAudit(context.core, event.msg));
    },
    /** The core asked for a timer: the machine raises it to itself later (cancelled when the actor stops). */
    armTimer: armTimer<HolderContext, HolderEvent>(),
    flushDueReceipts: ({ context }) => guarded(context, () => context.core.flushDueReceipts()),
    refreshReceipts: ({ context }) => guarded(context, () => context.core.refreshReceipts()),
    sealLane: ({ context, event }) => {
      assertEvent(event, "timer.seal");
      guarded(context, () => context.core.sealDue(event.lane));
    },
    resendDue: ({ context }) => guarded(context, () => context.core.resendDue()),
    resendLoaded: ({ context, event }) => {
      assertEvent(event, "resend.loaded");
      guarded(context, () => context.core.resendLoaded(event.lane, event.edge, event.units));
    },
    relievePressure: ({ context }) => guarded(context, () => context.moves.relievePressure()),
    flushTick: ({ context }) => guarded(context, () => context.moves.flushTick()),
    applyFlush: ({ context, event }) => {
      assertEvent(event, "flush.completed");
      guarded(context, () => context.moves.applyFlush(event.result));
    },
    updateEvidence: ({ context, event }) => {
      assertEvent(event, "evidence.update");
      guarded(context, () => context.core.setEvidence(event.evidence));
    },
    evacuate: ({ context }) => guarded(context, () => context.moves.evacuate()),
    checkEvacuation: ({ context }) => guarded(context, () => context.moves.evacuationDeadline()),
    stopGranting: ({ context }) => guarded(context, () => context.core.stopGranting()),
    stopCore: ({ context }) => {
      void context.core.stop();
    },
    /** Stops serving at once but keeps the spill stream open for the handover. */
    quiesceCore: ({ context }) => {
      void context.core.stop(true);
    },
    recordFence: assign(({ context }) => {
      context.core.counters.inc("fenced");
      return { fencedBy: admittedIncarnation(context.core) };
    }),
    recordStartFailure: ({ context, event }) => {
      context.startError = String((event as { error?: unknown }).error);
    },
  },
  guards: {
    evidenceDegrades: ({ context, event }) => {
      assertEvent(event, "evidence.update");
      return degradedBy(context.core, event.evidence);
    },
    evidenceHealthy: ({ context, event }) => {
      assertEvent(event, "evidence.update");
      return !degradedBy(context.core, event.evidence);
    },
    drained: ({ context }) => context.core.empty,
    superseded: ({ context }) => (admittedIncarnation(context.core) ?? 0) > context.core.config.incarnation,
  },
}).createMachine({
  id: "holder",
  initial: HolderState.Starting,
  context: ({ input, self, spawn }) => {
    const core = new HolderCore(input.config, input.ports, (e) => self.send(e), laneSpawner(spawn as Spawner));
    return { core, moves: new HolderCustodyMoves(core) };
  },
  on: {
    "nats.credit": { actions: "applyGrant" },
    "nats.receipt": { actions: "applyReceipt" },
    "nats.release": { actions: "applyReleaseFrontier" },
    "release.checked": { actions: "applyCheckedRelease" },
    "nats.transfer": { actions: "admitTransferOffer" },
    "nats.fetch": { actions: "serveFetch" },
    "nats.audit": { actions: "answerAudit" },
    "nats.base": { actions: "noteBase" },
    "transport.connection": { actions: "connectionChanged" },
    "timer.arm": { actions: "armTimer" },
    "timer.receipts": { actions: "flushDueReceipts" },
    "timer.refresh": [
      { guard: "superseded", target: `.${HolderState.Fenced}` },
      { actions: ["refreshReceipts", "resendDue", "relievePressure"] },
    ],
    "resend.loaded": { actions: "resendLoaded" },
    "timer.seal": { actions: ["sealLane", "relievePressure"] },
    "timer.flush": { actions: "flushTick" },
    "flush.completed": { actions: "applyFlush" },
    "timer.evacuation": { actions: "checkEvacuation" },
    "evidence.update": { actions: "updateEvidence" },
    retire: `.${HolderState.Retired}`,
    "xstate.error.actor.*": { actions: "noteLaneArenaFailure" },
  },
  states: {
    [HolderState.Starting]: {
      invoke: {
        src: "startCore",
        input: ({ context }) => ({ core: context.core }),
        onDone: HolderState.Serving,
        onError: { target: HolderState.Retired, actions: "recordStartFailure" },
      },
    },
    [HolderState.Serving]: {
      on: {
        "nats.units": { actions: ["admitUnits"] },
        "evidence.update": [
          { guard: "evidenceDegrades", target: HolderState.DegradedEvidence, actions: "updateEvidence" },
          { actions: "updateEvidence" },
        ],
        drain: HolderState.Draining,
      },
    },
    [HolderState.DegradedEvidence]: {
      entry: "evacuate",
      on: {
        "nats.units": { actions: ["admitUnits"] },
        "evidence.update": [
          { guard: "evidenceHealthy", target: HolderState.Serving, actions: "updateEvidence" },
          { actions: "updateEvidence" },
        ],
        drain: HolderState.Draining,
      },
    },
    [HolderState.Draining]: {
      entry: "stopGranting",
      always: { guard: "drained", target: HolderState.Retired },
      on: {
        // Units already credited are still admitted: a granted promise is kept.
        "nats.units": { actions: ["admitUnits"] },
      },
    },
    [HolderState.Retired]: {
      type: "final",
      entry: ["stopCore", "stopLaneArenas"],
    },
    [HolderState.Fenced]: {
      entry: ["recordFence", "quiesceCore"],
      invoke: {
        src: "handOver",
        input: ({ context }) => ({ core: context.core, by: context.fencedBy! }),
        onDone: { target: HolderState.Retired, actions: assign({ handover: ({ event }) => event.output }) },
        onError: HolderState.Retired,
      },
      // Nothing it receives or was due to do counts any more (no receipt, credit, release or flush).
      on: { retire: HolderState.Retired, "*": {} },
    },
  },
});
