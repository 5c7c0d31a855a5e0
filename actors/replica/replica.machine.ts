import { assertEvent, fromPromise, setup } from "xstate";
import type { CatchUpReport, CatchUpStart } from "./replica-catch-up-flow.ts";
import type { ReplicaEffect, ReplicaInboundEvent, ReplicaStepEvent } from "./replica-effects.ts";
import type { ReplicaState as ReplicaData } from "./replica-state.ts";
import { replicaStep } from "./replica-step.ts";

/**
 * The Replica Consumer actor: starting → serving (idle | catchingUp) → stopped, or failed when it
 * cannot start. Its context is plain data (replica/replica-state.ts): every inbound message, local
 * barrier, catch-up apply and executor completion goes through the pure step
 * (replica/replica-step.ts), whose effects run through the named `execute` action. The executors
 * (volume writes in source LSN order, I7: data before its local WAL record; the position file;
 * publishing) and the two invoked flows are supplied by startReplica (actors/replica/replica.ts) with
 * `machine.provide`. While serving it may catch up from the primary (`catchingUp`: the
 * `catchUpFlow` child runs the catch-up message flow, replica/replica-catch-up-flow.ts), one
 * catch-up at a time; units keep being applied meanwhile.
 */

/** Lifecycle states, as an enumeration. */
export const ReplicaState = { Starting: "starting", Serving: "serving", Stopped: "stopped", Failed: "failed" } as const;
export type ReplicaState = (typeof ReplicaState)[keyof typeof ReplicaState];

export type ReplicaEvent =
  | ReplicaInboundEvent
  /** A caller asks for a catch-up; it is answered by id (settleCatchUp / failCatchUp / refuseCatchUp). */
  | { type: "catchUp"; id: number };

interface ReplicaContext {
  state: ReplicaData;
  /** The caller waiting on the running catch-up. */
  catchUpId?: number;
  error?: string;
}

/** What the start flow found: this start's incarnation and the persisted flushed LSN. */
export interface ReplicaStart {
  incarnation: number;
  flushedLsn: number;
}

const notProvided = (what: string) => () => {
  throw new Error(`replica machine: ${what} is supplied by startReplica (machine.provide)`);
};

const replicaSetup = setup({
  types: {
    context: {} as ReplicaContext,
    events: {} as ReplicaEvent,
    input: {} as { state: ReplicaData },
  },
  actors: {
    startPorts: fromPromise<ReplicaStart>(async () => notProvided("startPorts")()),
    catchUpFlow: fromPromise<CatchUpReport, CatchUpStart>(async () => notProvided("catchUpFlow")()),
  },
  actions: {
    execute: (_, _effect: ReplicaEffect) => notProvided("the execute action")(),
  },
});

/** Folds `event` through the pure step: the new state is assigned, its effects run through `execute`. */
const stepWith = (toStep: (event: ReplicaEvent) => ReplicaStepEvent | undefined) =>
  replicaSetup.enqueueActions(({ context, event, enqueue }) => {
    const e = toStep(event);
    if (e === undefined) return;
    const { state, effects } = replicaStep(context.state, e);
    enqueue.assign({ state });
    for (const effect of effects) enqueue({ type: "execute", params: effect });
  });

const failCatchUp = replicaSetup.enqueueActions(({ context, event, enqueue }) => {
  const error = (event as { error?: unknown }).error;
  const code = error instanceof Error && "code" in error ? String(error.code) : "error";
  enqueue({ type: "execute", params: { type: "count", name: `replica_catchup_failed_${code}` } });
  if (context.catchUpId !== undefined)
    enqueue({ type: "execute", params: { type: "failCatchUp", id: context.catchUpId, error } });
  enqueue.assign({ catchUpId: undefined });
});

const settleCatchUp = replicaSetup.enqueueActions(({ context, event, enqueue }) => {
  const report = (event as unknown as { output: CatchUpReport }).output;
  if (context.catchUpId !== undefined)
    enqueue({ type: "execute", params: { type: "settleCatchUp", id: context.catchUpId, report } });
  enqueue.assign({ catchUpId: undefined });
});

/** A catch-up asked for when it cannot run: counted, and its caller refused with `reason`. */
const refuseCatchUp = (reason: "in_progress" | "not_serving", counter: string) =>
  replicaSetup.enqueueActions(({ event, enqueue }) => {
    if (event.type !== "catchUp") return;
    enqueue({ type: "execute", params: { type: "count", name: counter } });
    enqueue({ type: "execute", params: { type: "refuseCatchUp", id: event.id, reason } });
  });

/** Stopped: a running catch-up's caller is refused, then the step closes the lanes and the executors. */
const stop = replicaSetup.enqueueActions(({ context, enqueue }) => {
  if (context.catchUpId !== undefined)
    enqueue({ type: "execute", params: { type: "refuseCatchUp", id: context.catchUpId, reason: "stopped" } });
  const { state, effects } = replicaStep(context.state, { type: "stop" });
  enqueue.assign({ state, catchUpId: undefined });
  for (const effect of effects) enqueue({ type: "execute", params: effect });
});

export const replicaMachine = replicaSetup
  .extend({
    actions: {
      step: stepWith((event) => (event.type === "catchUp" || event.type === "stop" ? undefined : event)),
      started: stepWith((event) => ({ type: "started", ...(event as unknown as { output: ReplicaStart }).output })),
      noteError: replicaSetup.assign({ error: ({ event }) => String((event as { error?: unknown }).error) }),
      takeCatchUp: replicaSetup.assign({
        catchUpId: ({ event }) => {
          assertEvent(event, "catchUp");
          return event.id;
        },
      }),
      settleCatchUp,
      failCatchUp,
      refuseBusy: refuseCatchUp("in_progress", "catchup_in_progress"),
      refuseNotServing: refuseCatchUp("not_serving", "catchup_not_serving"),
      stop,
    },
  })
  .createMachine({
    id: "replica",
    context: ({ input }) => ({ state: input.state }),
    initial: ReplicaState.Starting,
    on: { stop: `.${ReplicaState.Stopped}`, catchUp: { actions: "refuseNotServing" } },
    states: {
      [ReplicaState.Starting]: {
        invoke: {
          src: "startPorts",
          onDone: { target: ReplicaState.Serving, actions: "started" },
          onError: { target: ReplicaState.Failed, actions: "noteError" },
        },
      },
      [ReplicaState.Serving]: {
        on: {
          "nats.message": { actions: "step" },
          apply: { actions: "step" },
          barrier: { actions: "step" },
          applied: { actions: "step" },
          applyFailed: { actions: "step" },
          persisted: { actions: "step" },
          persistFailed: { actions: "step" },
        },
        initial: "idle",
        states: {
          idle: { on: { catchUp: { target: "catchingUp", actions: "takeCatchUp" } } },
          catchingUp: {
            on: { catchUp: { actions: "refuseBusy" } },
            invoke: {
              src: "catchUpFlow",
              input: ({ context }) => ({
                replicaId: context.state.settings.replicaId,
                volume: context.state.settings.volume,
                flushedLsn: context.state.flushedLsn,
              }),
              onDone: { target: "idle", actions: "settleCatchUp" },
              onError: { target: "idle", actions: "failCatchUp" },
            },
          },
        },
      },
      [ReplicaState.Failed]: {},
      [ReplicaState.Stopped]: { type: "final", entry: "stop" },
    },
  });
