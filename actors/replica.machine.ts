import { assertEvent, fromPromise, setup } from "xstate";
import type { InboundMessage } from "../transport/index.ts";
import type { ReplicaCore } from "./replica/replica-core.ts";

/**
 * The Replica Consumer actor: starting → serving → stopped. The machine is the single owner of
 * the replica's inbound messages (units, credit requests, barriers); the named action hands each
 * to the core, which applies data before its local WAL record (I7) through SmartWAL.
 */

/** Lifecycle states, as an enumeration. */
export const ReplicaState = { Starting: "starting", Serving: "serving", Stopped: "stopped", Failed: "failed" } as const;
export type ReplicaState = (typeof ReplicaState)[keyof typeof ReplicaState];

export type ReplicaEvent = { type: "nats.message"; lane: string; msg: InboundMessage } | { type: "stop" };

export const replicaMachine = setup({
  types: { context: {} as { core: ReplicaCore; error?: string }, events: {} as ReplicaEvent, input: {} as { core: ReplicaCore } },
  actors: { startCore: fromPromise(async ({ input }: { input: { core: ReplicaCore } }) => input.core.start()) },
  actions: {
    handle: ({ context, event }) => {
      assertEvent(event, "nats.message");
      context.core.handleMessage(event.lane, event.msg);
    },
    noteError: ({ context, event }) => {
      context.error = String((event as { error?: unknown }).error);
    },
    stopCore: ({ context }) => context.core.stop(),
  },
}).createMachine({
  id: "replica",
  context: ({ input }) => ({ core: input.core }),
  initial: ReplicaState.Starting,
  on: { stop: `.${ReplicaState.Stopped}` },
  states: {
    [ReplicaState.Starting]: {
      invoke: {
        src: "startCore",
        input: ({ context }) => ({ core: context.core }),
        onDone: ReplicaState.Serving,
        onError: { target: ReplicaState.Failed, actions: "noteError" },
      },
    },
    [ReplicaState.Serving]: { on: { "nats.message": { actions: "handle" } } },
    [ReplicaState.Failed]: {},
    [ReplicaState.Stopped]: { type: "final", entry: "stopCore" },
  },
});
