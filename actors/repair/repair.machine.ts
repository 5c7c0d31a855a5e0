import { assign, fromPromise, setup } from "xstate";
import { protectionIds } from "./repair-plan.ts";
import type { ReceiptCheck, RepairActivation, RepairCopy, RepairSurvey } from "./repair-steps.ts";
import {
  DEFAULT_RECEIPT_TIMEOUT_MS,
  failureOf,
  initialRepairContext,
  receiptTimeoutFailure,
  repairOutcomeOf,
  type LaneRanges,
  type RepairContext,
  type RepairFailure,
  type RepairOutcome,
  type RepairSettings,
  type RepairTask,
} from "./repair-state.ts";

export type { RepairContext, RepairFailure, RepairOutcome, RepairReport } from "./repair-state.ts";

/**
 * The Repair Task actor, started by a declare-failure control event (as a child of the
 * controller's machine, or on its own in another process). It runs once, in order: surveying the
 * missing coverage (and protecting it from release while it is read) → admitting a replacement
 * holder through the control log → copying the missing ranges from survivors (digests validated)
 * → waiting for the replacement's own receipts (looking again every `receiptPoll` until they cover
 * the copy or `receiptsDueAt` passes) → activating it as responsible. Its context is plain data
 * (repair-state.ts); every read of the controller's state and every commit is an invoked child
 * whose implementation `repairMachineFor(ports)` supplies (repair-executors.ts), over the
 * `RepairPort`. The controller re-evaluates releases once the replacement is active. Its output
 * (`RepairOutcome`) is what its parent receives in `xstate.done.actor.<repairId>`.
 */

/** Lifecycle states, as an enumeration. */
export const RepairState = {
  Surveying: "surveying",
  Admitting: "admitting",
  Copying: "copying",
  AwaitingReceipts: "awaiting_receipts",
  Activating: "activating",
  Done: "done",
  Failed: "failed",
} as const;
export type RepairState = (typeof RepairState)[keyof typeof RepairState];

/** What the invoked children after the survey are given: the task and what it found missing. */
export interface RepairStepInput {
  readonly task: RepairTask;
  readonly missing: LaneRanges;
}

const stepInput = ({ context }: { context: RepairContext }): RepairStepInput => ({
  task: context.task,
  missing: context.missing,
});
const checkOf = ({ event }: { event: { output: ReceiptCheck } }): ReceiptCheck => event.output;
const taskInput = ({ context }: { context: RepairContext }): RepairTask => context.task;

const notProvided = (what: string) => (): never => {
  throw new Error(`repair machine: ${what} is supplied by repairMachineFor(ports) (machine.provide)`);
};

const failedIn =
  (step: RepairState) =>
  ({ event }: { event: { error: unknown } }): RepairFailure =>
    failureOf(step, event.error);
const toFailed = `#repair-task.${RepairState.Failed}` as const;

export const repairMachine = setup({
  types: { context: {} as RepairContext, input: {} as RepairSettings, output: {} as RepairOutcome },
  // The world-touching steps (repair-steps.ts); repairMachineFor supplies them, closed over the ports.
  actors: {
    survey: fromPromise<RepairSurvey, RepairTask>(async () => notProvided("survey")()),
    admit: fromPromise<number, RepairTask>(async () => notProvided("admit")()),
    copy: fromPromise<RepairCopy, RepairStepInput>(async () => notProvided("copy")()),
    checkReceipts: fromPromise<ReceiptCheck, RepairStepInput>(async () => notProvided("checkReceipts")()),
    activate: fromPromise<RepairActivation, RepairStepInput>(async () => notProvided("activate")()),
  },
  actions: {
    // Ending the protections makes the controller evaluate again (re-authorizing releases).
    // Without ports nothing was surveyed, so nothing is protected; ids to end need the port.
    endProtections: (_, { ids }: { ids: string[] }) => {
      if (ids.length > 0) notProvided("endProtections")();
    },
  },
  guards: {
    receiptsCovered: (_, check: ReceiptCheck) => check.covered,
    receiptsOverdue: ({ context }, check: ReceiptCheck) =>
      check.at > (context.receiptsDueAt ?? Number.POSITIVE_INFINITY),
  },
  delays: {
    // How long to wait before looking at the replacement's receipts again: the port's pollMs.
    receiptPoll: 1_000,
  },
}).createMachine({
  id: "repair-task",
  context: ({ input }) => initialRepairContext(input),
  initial: RepairState.Surveying,
  output: ({ context }) => repairOutcomeOf(context),
  states: {
    [RepairState.Surveying]: {
      invoke: {
        src: "survey",
        input: taskInput,
        onDone: {
          target: RepairState.Admitting,
          actions: assign(({ event }) => ({
            startedAt: event.output.startedAt,
            missing: event.output.missing,
            recovery: event.output.recovery,
          })),
        },
        onError: { target: toFailed, actions: assign({ error: failedIn(RepairState.Surveying) }) },
      },
    },
    [RepairState.Admitting]: {
      invoke: {
        src: "admit",
        input: taskInput,
        onDone: RepairState.Copying,
        onError: { target: toFailed, actions: assign({ error: failedIn(RepairState.Admitting) }) },
      },
    },
    [RepairState.Copying]: {
      invoke: {
        src: "copy",
        input: stepInput,
        onDone: {
          target: RepairState.AwaitingReceipts,
          actions: assign(({ context, event }) => ({
            copied: { units: event.output.units, bytes: event.output.bytes },
            receiptsDueAt: event.output.at + (context.task.receiptTimeoutMs ?? DEFAULT_RECEIPT_TIMEOUT_MS),
          })),
        },
        onError: { target: toFailed, actions: assign({ error: failedIn(RepairState.Copying) }) },
      },
    },
    [RepairState.AwaitingReceipts]: {
      initial: "checking",
      states: {
        checking: {
          invoke: {
            src: "checkReceipts",
            input: stepInput,
            onDone: [
              { guard: { type: "receiptsCovered", params: checkOf }, target: `#repair-task.${RepairState.Activating}` },
              {
                guard: { type: "receiptsOverdue", params: checkOf },
                target: toFailed,
                actions: assign({ error: ({ context }) => receiptTimeoutFailure(context) }),
              },
              { target: "waiting" },
            ],
            onError: { target: toFailed, actions: assign({ error: failedIn(RepairState.AwaitingReceipts) }) },
          },
        },
        waiting: { after: { receiptPoll: "checking" } },
      },
    },
    [RepairState.Activating]: {
      invoke: {
        src: "activate",
        input: stepInput,
        onDone: {
          target: RepairState.Done,
          actions: assign({ finished: ({ event }) => ({ controlSeq: event.output.controlSeq, at: event.output.at }) }),
        },
        onError: { target: toFailed, actions: assign({ error: failedIn(RepairState.Activating) }) },
      },
    },
    [RepairState.Done]: { type: "final", entry: { type: "endProtections", params: endParams } },
    [RepairState.Failed]: { type: "final", entry: { type: "endProtections", params: endParams } },
  },
});

function endParams({ context }: { context: RepairContext }): { ids: string[] } {
  return { ids: protectionIds(context.task.repairId, context.missing) };
}
