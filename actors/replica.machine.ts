import { assertEvent, assign, fromPromise, setup } from "xstate";
import type { InboundMessage } from "../transport/index.ts";
import { CatchUpUnavailableError } from "./replica/catch-up-refusal.ts";
import { runCatchUp, type CatchUpLink, type CatchUpReport } from "./replica/replica-catch-up-flow.ts";
import type { ReplicaCore } from "./replica/replica-core.ts";

/**
 * The Replica Consumer actor: starting → serving → stopped. The machine is the single owner of
 * the replica's inbound messages (units, credit requests, barriers); the named action hands each
 * to the core, which applies data before its local WAL record (I7) through SmartWAL. While serving
 * it may catch up from the primary (`catchingUp`: the `catchUpFlow` child runs the catch-up message
 * flow, replica/replica-catch-up-flow.ts), one catch-up at a time; units keep being applied meanwhile.
 */

/** Lifecycle states, as an enumeration. */
export const ReplicaState = { Starting: "starting", Serving: "serving", Stopped: "stopped", Failed: "failed" } as const;
export type ReplicaState = (typeof ReplicaState)[keyof typeof ReplicaState];

/** Where a catch-up's outcome goes. */
export interface CatchUpReply {
  resolve(report: CatchUpReport): void;
  reject(err: unknown): void;
}

export type ReplicaEvent =
  | { type: "nats.message"; lane: string; msg: InboundMessage }
  | { type: "catchUp"; reply: CatchUpReply }
  | { type: "stop" };

interface ReplicaContext {
  core: ReplicaCore;
  link: CatchUpLink;
  error?: string;
  /** The caller waiting on the running catch-up. */
  pending?: CatchUpReply;
}

export const replicaMachine = setup({
  types: {
    context: {} as ReplicaContext,
    events: {} as ReplicaEvent,
    input: {} as { core: ReplicaCore; link: CatchUpLink },
  },
  actors: {
    startCore: fromPromise(async ({ input }: { input: { core: ReplicaCore } }) => input.core.start()),
    catchUpFlow: fromPromise(async ({ input }: { input: { core: ReplicaCore; link: CatchUpLink } }) =>
      runCatchUp(input.core, input.link),
    ),
  },
  actions: {
    handle: ({ context, event }) => {
      assertEvent(event, "nats.message");
      context.core.handleMessage(event.lane, event.msg);
    },
    noteError: ({ context, event }) => {
      context.error = String((event as { error?: unknown }).error);
    },
    takeCatchUp: assign({
      pending: ({ event }) => {
        assertEvent(event, "catchUp");
        return event.reply;
      },
    }),
    // Side effects stay out of assign (its assigners must be pure): settle the caller, then clear.
    resolveCatchUp: ({ context, event }) => {
      context.pending?.resolve((event as unknown as { output: CatchUpReport }).output);
    },
    rejectCatchUp: ({ context, event }) => {
      const err = (event as { error?: unknown }).error;
      context.core.counters.inc(
        `replica_catchup_failed_${err instanceof Error && "code" in err ? String(err.code) : "error"}`,
      );
      context.pending?.reject(err);
    },
    clearPending: assign({ pending: undefined }),
    refuseBusy: ({ context, event }) => {
      assertEvent(event, "catchUp");
      context.core.counters.inc("catchup_in_progress");
      event.reply.reject(new CatchUpUnavailableError("in_progress"));
    },
    refuseNotServing: ({ context, event }) => {
      if (event.type !== "catchUp") return;
      context.core.counters.inc("catchup_not_serving");
      event.reply.reject(new CatchUpUnavailableError("not_serving"));
    },
    stopCore: ({ context }) => {
      context.pending?.reject(new CatchUpUnavailableError("stopped"));
      context.core.stop();
    },
  },
}).createMachine({
  id: "replica",
  context: ({ input }) => ({ core: input.core, link: input.link }),
  initial: ReplicaState.Starting,
  on: { stop: `.${ReplicaState.Stopped}`, catchUp: { actions: "refuseNotServing" } },
  states: {
    [ReplicaState.Starting]: {
      invoke: {
        src: "startCore",
        input: ({ context }) => ({ core: context.core }),
        onDone: ReplicaState.Serving,
        onError: { target: ReplicaState.Failed, actions: "noteError" },
      },
    },
    [ReplicaState.Serving]: {
      on: { "nats.message": { actions: "handle" } },
      initial: "idle",
      states: {
        idle: { on: { catchUp: { target: "catchingUp", actions: "takeCatchUp" } } },
        catchingUp: {
          on: { catchUp: { actions: "refuseBusy" } },
          invoke: {
            src: "catchUpFlow",
            input: ({ context }) => ({ core: context.core, link: context.link }),
            onDone: { target: "idle", actions: ["resolveCatchUp", "clearPending"] },
            onError: { target: "idle", actions: ["rejectCatchUp", "clearPending"] },
          },
        },
      },
    },
    [ReplicaState.Failed]: {},
    [ReplicaState.Stopped]: { type: "final", entry: "stopCore" },
  },
});
