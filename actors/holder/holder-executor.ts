import { fromPromise, type ActorRefFrom } from "xstate";
import { Counters, CustodyError } from "../../core/index.ts";
import { holderSetup, type HolderEvent, type LaneArenaSpawner } from "./holder.machine.ts";
import type { laneArenaIngressLogic } from "../lane-arena/index.ts";
import { answerChallenge } from "./audit-responder.ts";
import { serveFetch } from "./fetch-service.ts";
import type { HolderConfig } from "./holder-config.ts";
import { HolderCore } from "./holder-core.ts";
import { HolderCustodyMoves } from "./holder-custody-moves.ts";
import type { HolderEffect } from "./holder-effects.ts";
import { handOver, type HandoverReport } from "./holder-handover.ts";
import type { SpawnLaneArena } from "./holder-lane.ts";
import type { HolderObservation, HolderPorts } from "./holder-ports.ts";
import type { HolderLaneTopology, HolderPlainState } from "./holder-state.ts";
import { holderStep, type HolderStepEvent } from "./holder-step.ts";

/**
 * The holder machine's executor: the implementations `startHolder` provides to holder.machine.ts
 * (`holderMachine.provide`). It alone reaches the ports (transport, clock, counters, observer, peer
 * directory) and the lane runtime (HolderCore and HolderCustodyMoves, which own the lane arenas,
 * obligations, credit windows, send logs and spill driver): the machine's context holds none of them.
 * A bug or an unexpected input must never stop the holder (an XState actor stops on a throwing
 * action, and with it every custody promise): every call into the runtime is guarded, the error
 * counted as `internal_error.<code>` and recorded, and the actor keeps serving.
 */

/** Thrown when the executor is used before `boot` created the lane runtime. */
export class HolderNotBootedError extends CustodyError {
  constructor() {
    super("holder_not_booted", "the holder's lane runtime is used before the machine booted it", {});
  }
}

/** Thrown for an effect the executor does not run (`arm` is the machine's own: a wiring bug, counted). */
export class HolderEffectNotExecutableError extends CustodyError {
  constructor(type: string) {
    super("effect_not_executable", `the executor does not run ${type} effects`, { type });
  }
}

/**
 * Spawns lane arenas as children of the holder actor. Each starts at once (XState would start it
 * after the current transition): the holder stores into a lane in the same step that admits it.
 */
function laneSpawner(spawn: LaneArenaSpawner): SpawnLaneArena {
  return (id, input) => {
    const ref: ActorRefFrom<typeof laneArenaIngressLogic> = spawn("laneArena", { id, input });
    ref.start();
    return ref;
  };
}

/** The machine's lane topology with every lane the runtime serves (a transfer may have added one). */
function withServedLanes(
  lanes: HolderPlainState["lanes"],
  served: ReadonlyMap<string, { volume: string; lane: string; edges: ReadonlyMap<string, unknown> }>,
): HolderPlainState["lanes"] {
  if (Object.keys(lanes).length === served.size) return lanes;
  const out: Record<string, HolderLaneTopology> = { ...lanes };
  for (const [key, hl] of served) out[key] ??= { volume: hl.volume, lane: hl.lane, edges: [...hl.edges.keys()] };
  return out;
}

export interface HolderExecutor {
  /** The counters every count effect and the lane runtime increment. */
  readonly counters: Counters;
  /** The lane runtime, once the machine booted it (read-only views and shutdown in holder.ts). */
  core(): HolderCore;
  /** What `holderMachine.provide` takes. */
  readonly implementations: ReturnType<typeof implementationsFor>;
}

export function holderExecutor(config: HolderConfig, ports: HolderPorts): HolderExecutor {
  const counters = ports.counters ?? new Counters();
  const rt: Runtime = {
    config,
    ports: { ...ports, counters },
    counters,
    core: undefined,
    moves: undefined,
    seen: undefined,
  };
  return { counters, core: () => coreOf(rt), implementations: implementationsFor(rt) };
}

interface Runtime {
  readonly config: HolderConfig;
  readonly ports: HolderPorts & { readonly counters: Counters };
  readonly counters: Counters;
  core: HolderCore | undefined;
  moves: HolderCustodyMoves | undefined;
  /**
   * The machine state the executor was last handed (at boot, and with every event it runs for): the
   * lane runtime reads the protected-RAM evidence from it, also between events (start, the handle's
   * protection reads). Every change of the evidence is followed by an effect, so it is never behind.
   */
  seen: HolderPlainState | undefined;
}

function coreOf(rt: Runtime): HolderCore {
  if (rt.core === undefined) throw new HolderNotBootedError();
  return rt.core;
}

function movesOf(rt: Runtime): HolderCustodyMoves {
  if (rt.moves === undefined) throw new HolderNotBootedError();
  return rt.moves;
}

function observe(rt: Runtime, o: HolderObservation): void {
  rt.ports.observe?.(o);
}

/** Runs `fn`; an error is counted as `internal_error.<code>` and recorded instead of stopping the actor. */
function guarded(rt: Runtime, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    const code = (err as { code?: unknown })?.code;
    rt.counters.inc(`internal_error.${typeof code === "string" ? code : "unexpected"}`);
    observe(rt, { type: "rejected", code: `internal_error.${typeof code === "string" ? code : String(err)}` });
  }
}

/**
 * Runs `fn` on the lane runtime with the machine's receipt batches open to it, and returns the state
 * with the batches (and any lane a transfer added) as `fn` left them.
 */
function inSession(rt: Runtime, state: HolderPlainState, fn: () => void): HolderPlainState {
  rt.seen = state;
  const core = coreOf(rt);
  core.receipts.open(state);
  guarded(rt, fn);
  const receipts = core.receipts.close();
  const lanes = withServedLanes(state.lanes, core.lanes);
  const retainsCustody = !core.empty;
  if (receipts === state.receipts && lanes === state.lanes && retainsCustody === state.retainsCustody) return state;
  return { ...state, receipts, lanes, retainsCustody };
}

/** The events `forward` hands whole to the lane runtime (none of the pure steps takes them yet). */
type ForwardedEvent = Exclude<HolderEvent, HolderStepEvent | { type: "timer.arm" | "retire" }>;

/**
 * Units on one of the holder's unit subjects (holder-ingress.ts: credit, validation, storage in the
 * lane arena, forwarding, receipt notes), each message guarded on its own (one failing leaves the others).
 */
function forwardToRuntime(rt: Runtime, event: ForwardedEvent): void {
  const core = coreOf(rt);
  for (const msg of event.msgs) guarded(rt, () => core.handleUnit(event.lane, msg));
}

/** Runs one effect of a pure step (`arm` never comes here: the machine raises it itself). */
function executeEffect(
  rt: Runtime,
  state: HolderPlainState,
  e: HolderEffect,
  spawn: LaneArenaSpawner,
): HolderPlainState {
  rt.seen = state;
  switch (e.type) {
    case "count":
      rt.counters.inc(e.name, e.by);
      return state;
    case "observe":
      observe(rt, e.observation);
      return state;
    case "publishReceipt":
      guarded(rt, () => coreOf(rt).publishReceiptBatch(e.lane, e, state.lanes[e.lane]?.base));
      return state;
    case "applyFrontier":
      return inSession(rt, state, () => coreOf(rt).applyReleaseFrontier(e.lane, e.holder, e.ranges));
    case "applyLaneReceipt":
      return inSession(rt, state, () => coreOf(rt).applyLaneReceipt(e.lane, e.from, e.signed, e.msg));
    case "republishReceipts":
      return inSession(rt, state, () => coreOf(rt).republishReceipts());
    case "resendDue":
      return inSession(rt, state, () => coreOf(rt).resendDue());
    case "relievePressure":
      return inSession(rt, state, () => movesOf(rt).relievePressure());
    case "serveFetch":
      guarded(rt, () => serveFetch(coreOf(rt), e.lane, e, e.msg));
      return state;
    case "answerAudit":
      guarded(rt, () => answerChallenge(coreOf(rt), e.lane, e, e.msg));
      return state;
    case "applyGrant":
      return inSession(rt, state, () => coreOf(rt).applyGrant(e.lane, e.edge, e.grant));
    case "applyCheckedFrontier":
      return inSession(rt, state, () => coreOf(rt).releaseChecked(e.lane, e.holder, e.ranges));
    case "resendLoaded":
      return inSession(rt, state, () => coreOf(rt).resendLoaded(e.lane, e.edge, e.units));
    case "sealDue":
      return inSession(rt, state, () => coreOf(rt).sealDue(e.lane));
    case "startFlush":
      return inSession(rt, state, () => movesOf(rt).startFlush(e.all));
    case "applyFlush":
      return inSession(rt, state, () => movesOf(rt).applyFlush(e.result));
    case "evacuate":
      return inSession(rt, state, () => movesOf(rt).evacuate());
    case "evacuationDeadline":
      return inSession(rt, state, () => movesOf(rt).evacuationDeadline());
    case "admitTransfer":
      // An offer for a lane not served yet spawns that lane's arena actor (why effects run in an `assign`).
      return inSession(rt, state, () => movesOf(rt).admitOffer(e, e.units, e.tokens, laneSpawner(spawn)));
    case "reconnected":
      return inSession(rt, state, () => coreOf(rt).reconnected());
    case "closeGrants":
      // In a session: the draining state's `drained` check reads what the runtime retains now.
      return inSession(rt, state, () => coreOf(rt).closeGrants());
    case "evidenceChanged":
      guarded(rt, () => coreOf(rt).evidenceChanged());
      return state;
    case "arm":
      guarded(rt, () => {
        throw new HolderEffectNotExecutableError("arm");
      });
      return state;
  }
}

/** The named actions, guards and actors holder.machine.ts leaves to the executor. */
function implementationsFor(rt: Runtime) {
  const { config, ports, counters } = rt;
  return {
    actions: {
      boot: holderSetup.assign(({ context, self, spawn }) => {
        const dispatch = (e: HolderEvent) => self.send(e);
        rt.seen = context.state;
        const seen = () => rt.seen ?? context.state;
        rt.core = new HolderCore(config, ports, dispatch, laneSpawner(spawn as LaneArenaSpawner), seen);
        rt.moves = new HolderCustodyMoves(rt.core);
        return {};
      }),
      step: holderSetup.enqueueActions(({ context, event, enqueue }) => {
        let r;
        try {
          r = holderStep(context.state, event as HolderStepEvent, ports.clock.now());
        } catch (err) {
          // A step that throws is a bug: counted, and the state stays as it was.
          return guarded(rt, () => {
            throw err;
          });
        }
        if (r.state !== context.state) enqueue.assign({ state: r.state });
        // Effects run in order, each on the state the ones before it left (a release frontier's
        // receipts come back into `state`); timers are the machine's own delayed events.
        for (const e of r.effects)
          if (e.type === "arm") enqueue.raise(e.event, { delay: e.ms });
          else
            enqueue.assign(({ context: c, spawn }) => {
              let state = c.state;
              // Guarded as a whole too: an observer that throws must not stop the holder either.
              guarded(rt, () => (state = executeEffect(rt, c.state, e, spawn as LaneArenaSpawner)));
              return state === c.state ? {} : { state };
            });
      }),
      forward: holderSetup.assign(({ context, event }) => {
        const state = inSession(rt, context.state, () => forwardToRuntime(rt, event as ForwardedEvent));
        return state === context.state ? {} : { state };
      }),
      stopCore: () => void rt.core?.stop(),
      quiesceCore: () => void rt.core?.stop(true),
      recordFence: holderSetup.assign(() => {
        counters.inc("fenced");
        return { fencedBy: ports.peers.incarnation(config.holderId) };
      }),
    },
    guards: {
      superseded: () => (ports.peers.incarnation(config.holderId) ?? 0) > config.incarnation,
    },
    actors: {
      startCore: fromPromise<void>(() => coreOf(rt).start()),
      handOver: fromPromise<HandoverReport, { by: number }>(({ input }) => handOver(coreOf(rt), input.by)),
    },
  };
}
