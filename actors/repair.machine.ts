import { assign, fromPromise, setup } from "xstate";
import { RangeSet } from "../lanes/index.ts";
import { repairEstimate, type RepairEstimate } from "./repair/repair-estimate.ts";
import { activateReplacement, admitReplacement, awaitReplacementReceipts, copyMissing, missingCoverage, type RepairInput } from "./repair/repair-steps.ts";

/**
 * The Repair Task actor, started by a declare-failure control event. It runs once, in order:
 * computing the missing coverage → admitting a replacement holder through the control log →
 * copying the missing ranges from survivors (digests validated) → waiting for the replacement's
 * own receipts → activating it as responsible. Only then does it ask the controller to evaluate
 * again (re-authorizing releases). Survivors' ranges being copied are registered as an in-flight
 * recovery, so no release can drop them mid-copy.
 */

/** Lifecycle states, as an enumeration. */
export const RepairState = {
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

export interface RepairContext {
  readonly input: RepairInput;
  readonly startedAt: number;
  missing: Record<string, RangeSet>;
  copied: { units: number; bytes: number };
  report?: RepairReport;
  error?: { code: string; message: string };
}

const errorOf = (e: unknown) => ({ code: (e as { code?: string }).code ?? "repair_failed", message: e instanceof Error ? e.message : String(e) });

export const repairMachine = setup({
  types: { context: {} as RepairContext, input: {} as RepairInput },
  actors: {
    admit: fromPromise<number, RepairInput>(({ input }) => admitReplacement(input)),
    copy: fromPromise<{ units: number; bytes: number }, { input: RepairInput; missing: Record<string, RangeSet> }>(async ({ input }) => copyMissing(input.input, input.missing)),
    awaitReceipts: fromPromise<void, { input: RepairInput; missing: Record<string, RangeSet> }>(({ input }) => awaitReplacementReceipts(input.input, input.missing)),
    activate: fromPromise<number, { input: RepairInput; missing: Record<string, RangeSet> }>(({ input }) => activateReplacement(input.input, input.missing)),
  },
  actions: {
    protectSources: ({ context }) => {
      for (const [lane, ranges] of Object.entries(context.missing)) {
        if (!ranges.isEmpty) context.input.controller.beginRecovery({ id: `${context.input.repairId}-${lane}`, lane, ranges });
      }
    },
    askReevaluation: ({ context }) => {
      context.input.controller.dirty = true;
    },
    unprotectSources: ({ context }) => {
      for (const lane of Object.keys(context.missing)) context.input.controller.endRecovery(`${context.input.repairId}-${lane}`);
    },
  },
}).createMachine({
  id: "repair-task",
  context: ({ input }) => {
    const missing = missingCoverage(input);
    return { input, startedAt: input.clock.now(), missing, copied: { units: 0, bytes: 0 } };
  },
  initial: RepairState.Admitting,
  entry: "protectSources",
  states: {
    [RepairState.Admitting]: {
      invoke: {
        src: "admit",
        input: ({ context }) => context.input,
        onDone: RepairState.Copying,
        onError: { target: RepairState.Failed, actions: assign({ error: ({ event }) => errorOf(event.error) }) },
      },
    },
    [RepairState.Copying]: {
      invoke: {
        src: "copy",
        input: ({ context }) => ({ input: context.input, missing: context.missing }),
        onDone: { target: RepairState.AwaitingReceipts, actions: assign({ copied: ({ event }) => event.output }) },
        onError: { target: RepairState.Failed, actions: assign({ error: ({ event }) => errorOf(event.error) }) },
      },
    },
    [RepairState.AwaitingReceipts]: {
      invoke: {
        src: "awaitReceipts",
        input: ({ context }) => ({ input: context.input, missing: context.missing }),
        onDone: RepairState.Activating,
        onError: { target: RepairState.Failed, actions: assign({ error: ({ event }) => errorOf(event.error) }) },
      },
    },
    [RepairState.Activating]: {
      invoke: {
        src: "activate",
        input: ({ context }) => ({ input: context.input, missing: context.missing }),
        onDone: {
          target: RepairState.Done,
          actions: assign({
            report: ({ context, event }) => {
              const missingBytes = context.copied.bytes;
              const rec = context.input.controller.config.topology.recovery;
              return {
                repairId: context.input.repairId,
                missing: Object.fromEntries(Object.entries(context.missing).map(([l, r]) => [l, r.toJSON()])),
                copiedUnits: context.copied.units,
                copiedBytes: context.copied.bytes,
                measuredMs: context.input.clock.now() - context.startedAt,
                estimate: repairEstimate(rec, missingBytes, context.input.repairBandwidthBytesPerSec),
                controlSeq: event.output,
              };
            },
          }),
        },
        onError: { target: RepairState.Failed, actions: assign({ error: ({ event }) => errorOf(event.error) }) },
      },
    },
    [RepairState.Done]: { type: "final", entry: ["unprotectSources", "askReevaluation"] },
    [RepairState.Failed]: { type: "final", entry: "unprotectSources" },
  },
});
