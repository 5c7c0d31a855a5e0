import { enqueueActions, raise, setup } from "xstate";
import type { WriterEvent } from "./writer-events.ts";
import { writerStep } from "./writer-step.ts";
import { progressEveryMs, resendEveryMs, type WriterState as WriterData } from "./writer-state.ts";

/**
 * The Volume Writer actor. Lifecycle: active → fenced → stopped (or active → stopped).
 * - active: writes are admitted by SmartWAL and streamed as units; receipts fold into protection.
 * - fenced: a newer writer term took over (failover). No write is admitted again, pending
 *   protected syncs fail; holders refuse this term's units anyway once they saw the newer term.
 * Its context is the writer's plain-data state; every event goes through the pure `writerStep`
 * (named action `step`), whose effects run as the named action `execute` (supplied by
 * startVolumeWriter: transport, volume, outbox, replies) — except timers, which are the
 * machine's own delayed events: the group-commit cut while writes are in flight, protected syncs'
 * timeouts, and the repeating resend and progress ticks (sampled with the time into `resend.due` /
 * `progress.due`).
 */

/** Lifecycle states, as an enumeration. */
export const WriterState = { Active: "active", Fenced: "fenced", Stopped: "stopped" } as const;
export type WriterState = (typeof WriterState)[keyof typeof WriterState];

export interface WriterContext {
  readonly state: WriterData;
}

export type { WriterEvent };

export const volumeWriterMachine = setup({
  types: {
    context: {} as WriterContext,
    events: {} as WriterEvent,
    input: {} as { state: WriterData },
  },
  actions: {
    step: enqueueActions(({ context, event, enqueue }) => {
      const { state, effects } = writerStep(context.state, event);
      if (state !== context.state) enqueue.assign({ state });
      if (effects.length === 0) return;
      // One `execute` action per event (the hot path's events carry several effects).
      let run = effects;
      if (effects.some((e) => e.type === "schedule" || e.type === "cancel")) {
        run = [];
        for (const e of effects) {
          if (e.type === "schedule") enqueue.raise(e.event, { delay: e.delayMs, id: e.timer });
          else if (e.type === "cancel") enqueue.cancel(e.timer);
          else run.push(e);
        }
      }
      if (run.length > 0) enqueue({ type: "execute", params: run });
    }),
    // Supplied by startVolumeWriter (machine.provide): the executor of the step's effects, in order
    // (params: WriterEffect[]; typed `unknown` here so the actions above type-check without a cycle).
    execute: (_, _effect: unknown) => undefined,
    startPorts: () => undefined,
    stopPorts: () => undefined,
    sampleResend: () => undefined,
    sampleProgress: () => undefined,
    // A fenced writer refuses calls: counted, and the caller's promise rejected.
    refuseCall: enqueueActions(({ context, event, enqueue }) => {
      let ids: number[] = [];
      if (event.type === "writes") ids = event.writes.map((w) => w.id);
      else if (event.type === "write" || event.type === "sync") ids = [event.id];
      const detail = { term: context.state.config.term, state: WriterState.Fenced };
      const refusal = { kind: "fenced", detail } as const;
      const params = [];
      for (const id of ids) params.push({ type: "count", name: "writer_fenced" }, { type: "refuse", id, refusal });
      enqueue({ type: "execute", params });
    }),
    armTimers: enqueueActions(({ context, enqueue }) => {
      enqueue.raise({ type: "timer.resend" }, { delay: resendEveryMs(context.state), id: "timer.resend" });
      const progress = progressEveryMs(context.state);
      if (progress > 0) enqueue.raise({ type: "timer.progress" }, { delay: progress, id: "timer.progress" });
    }),
    armResend: raise({ type: "timer.resend" }, { delay: "resendEvery", id: "timer.resend" }),
    armProgress: raise({ type: "timer.progress" }, { delay: "progressEvery", id: "timer.progress" }),
  },
  delays: {
    resendEvery: ({ context }) => resendEveryMs(context.state),
    progressEvery: ({ context }) => progressEveryMs(context.state),
  },
  guards: {
    newerTerm: ({ context, event }) => event.type === "fence" && event.newTerm > context.state.config.term,
  },
}).createMachine({
  id: "volume-writer",
  context: ({ input }) => ({ state: input.state }),
  initial: WriterState.Active,
  entry: ["startPorts", "armTimers"],
  // In every state but stopped: completions of work already started, and the repeating timers
  // (a fenced writer still re-sends what holders have not receipted).
  on: {
    "wal.written": { actions: "step" },
    cut: { actions: "step" },
    "unit.sealed": { actions: "step" },
    "outbox.flushed": { actions: "step" },
    "outbox.failed": { actions: "step" },
    "sync.local": { actions: "step" },
    "waiter.timeout": { actions: "step" },
    "edge.reset": { actions: "step" },
    "resend.due": { actions: "step" },
    "progress.due": { actions: "step" },
    "timer.resend": { actions: ["sampleResend", "armResend"] },
    "timer.progress": { actions: ["sampleProgress", "armProgress"] },
  },
  states: {
    [WriterState.Active]: {
      on: {
        write: { actions: "step" },
        writes: { actions: "step" },
        sync: { actions: "step" },
        receipt: { actions: "step" },
        receipts: { actions: "step" },
        "receipt.invalid": { actions: "step" },
        "nats.status": { actions: "step" },
        "nats.release": { actions: "step" },
        "release.checked": { actions: "step" },
        "transport.connection": { actions: "step" },
        fence: { guard: "newerTerm", target: WriterState.Fenced, actions: "step" },
        stop: { target: WriterState.Stopped, actions: "step" },
      },
    },
    [WriterState.Fenced]: {
      on: {
        // Receipts still fold: they tell the truth about what of the old history survived.
        receipt: { actions: "step" },
        receipts: { actions: "step" },
        "receipt.invalid": { actions: "step" },
        write: { actions: "refuseCall" },
        writes: { actions: "refuseCall" },
        sync: { actions: "refuseCall" },
        stop: { target: WriterState.Stopped, actions: "step" },
      },
    },
    [WriterState.Stopped]: { type: "final", entry: "stopPorts" },
  },
});
