import { assign, fromPromise, setup } from "xstate";
import type { RangeSet } from "../lanes/index.ts";
import type { RecoveryParams } from "../policies/index.ts";
import { repairEstimate, type RepairEstimate } from "./repair/repair-estimate.ts";
import {
  activateReplacement,
  admitReplacement,
  awaitReplacementReceipts,
  copyMissing,
  surveyMissing,
  type RepairInput,
  type RepairSurvey,
} from "./repair/repair-steps.ts";

/**
 * The Repair Task actor, started by a declare-failure control event (as a child of the
 * controller's machine, or on its own in another process). It runs once, in order: surveying the
 * missing coverage (and protecting it from release while it is read) → admitting a replacement
 * holder through the control log → copying the missing ranges from survivors (digests validated)
 * → waiting for the replacement's own receipts → activating it as responsible. Everything it reads
 * of the controller's state and every commit goes through its `RepairPort`; the controller
 * re-evaluates releases once the replacement is active. Its output (`RepairOutcome`) is what its
 * parent receives in `xstate.done.actor.<repairId>`.
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

/** What a finished repair reports: measured time next to the policy estimate. */
export interface RepairReport {
  readonly repairId: string;
  readonly missing: Record<string, [number, number][]>;
  readonly copiedUnits: number;
  readonly copiedBytes: number;
  readonly measuredMs: number;
  readonly estimate: RepairEstimate;
  readonly controlSeq: number;
}

/** Why a repair failed: the step it was in and the error's code and message. */
export interface RepairFailure {
  readonly step: string;
  readonly code: string;
  readonly message: string;
}

/** How a repair task ended: exactly one of `report` and `failure`. */
export interface RepairOutcome {
  readonly repairId: string;
  readonly report?: RepairReport;
  readonly failure?: RepairFailure;
}

export interface RepairContext {
  readonly input: RepairInput;
  readonly startedAt: number;
  missing: Record<string, RangeSet>;
  recovery?: RecoveryParams;
  copied: { units: number; bytes: number };
  report?: RepairReport;
  error?: RepairFailure;
}

const failedIn =
  (step: RepairState) =>
  ({ event }: { event: { error: unknown } }): RepairFailure => ({
    step,
    code: (event.error as { code?: string }).code ?? "repair_failed",
    message: event.error instanceof Error ? event.error.message : String(event.error),
  });

type StepInput = { input: RepairInput; missing: Record<string, RangeSet> };
const stepInput = ({ context }: { context: RepairContext }): StepInput => ({
  input: context.input,
  missing: context.missing,
});

export const repairMachine = setup({
  types: { context: {} as RepairContext, input: {} as RepairInput, output: {} as RepairOutcome },
  actors: {
    survey: fromPromise<RepairSurvey, RepairInput>(({ input }) => surveyMissing(input)),
    admit: fromPromise<number, RepairInput>(({ input }) => admitReplacement(input)),
    copy: fromPromise<{ units: number; bytes: number }, StepInput>(async ({ input }) =>
      copyMissing(input.input, input.missing),
    ),
    awaitReceipts: fromPromise<void, StepInput>(({ input }) => awaitReplacementReceipts(input.input, input.missing)),
    activate: fromPromise<number, StepInput>(({ input }) => activateReplacement(input.input, input.missing)),
  },
  actions: {
    // Fire and forget: a protection left behind (its controller unreachable) is ended by the
    // controller when the repair's outcome reaches it, and the control-log hold has a lease.
    unprotectSources: ({ context }) => {
      for (const lane of Object.keys(context.missing))
        void context.input.port.unprotect(`${context.input.repairId}-${lane}`).catch(() => undefined);
    },
  },
}).createMachine({
  id: "repair-task",
  context: ({ input }) => ({ input, startedAt: input.clock.now(), missing: {}, copied: { units: 0, bytes: 0 } }),
  initial: RepairState.Surveying,
  output: ({ context }) => ({
    repairId: context.input.repairId,
    ...(context.report ? { report: context.report } : {}),
    ...(context.error ? { failure: context.error } : {}),
  }),
  states: {
    [RepairState.Surveying]: {
      invoke: {
        src: "survey",
        input: ({ context }) => context.input,
        onDone: {
          target: RepairState.Admitting,
          actions: assign({
            missing: ({ event }) => event.output.missing,
            recovery: ({ event }) => event.output.view.recovery,
          }),
        },
        onError: { target: RepairState.Failed, actions: assign({ error: failedIn(RepairState.Surveying) }) },
      },
    },
    [RepairState.Admitting]: {
      invoke: {
        src: "admit",
        input: ({ context }) => context.input,
        onDone: RepairState.Copying,
        onError: { target: RepairState.Failed, actions: assign({ error: failedIn(RepairState.Admitting) }) },
      },
    },
    [RepairState.Copying]: {
      invoke: {
        src: "copy",
        input: stepInput,
        onDone: { target: RepairState.AwaitingReceipts, actions: assign({ copied: ({ event }) => event.output }) },
        onError: { target: RepairState.Failed, actions: assign({ error: failedIn(RepairState.Copying) }) },
      },
    },
    [RepairState.AwaitingReceipts]: {
      invoke: {
        src: "awaitReceipts",
        input: stepInput,
        onDone: RepairState.Activating,
        onError: { target: RepairState.Failed, actions: assign({ error: failedIn(RepairState.AwaitingReceipts) }) },
      },
    },
    [RepairState.Activating]: {
      invoke: {
        src: "activate",
        input: stepInput,
        onDone: {
          target: RepairState.Done,
          actions: assign({
            report: ({ context, event }) => ({
              repairId: context.input.repairId,
              missing: Object.fromEntries(Object.entries(context.missing).map(([l, r]) => [l, r.toJSON()])),
              copiedUnits: context.copied.units,
              copiedBytes: context.copied.bytes,
              measuredMs: context.input.clock.now() - context.startedAt,
              estimate: repairEstimate(
                context.recovery!,
                context.copied.bytes,
                context.input.repairBandwidthBytesPerSec,
              ),
              controlSeq: event.output,
            }),
          }),
        },
        onError: { target: RepairState.Failed, actions: assign({ error: failedIn(RepairState.Activating) }) },
      },
    },
    // Ending the protections makes the controller evaluate again (re-authorizing releases).
    [RepairState.Done]: { type: "final", entry: "unprotectSources" },
    [RepairState.Failed]: { type: "final", entry: "unprotectSources" },
  },
});
