import {
  assertEvent,
  assign,
  enqueueActions,
  fromPromise,
  or,
  raise,
  setup,
  spawnChild,
  type DoneActorEvent,
} from "xstate";
import type { TimerArm } from "../../core/index.ts";
import { armTimer } from "../machine-timer.ts";
import type { Transport } from "../../transport/index.ts";
import { requestRemoteRepair, type RemoteRepairTask } from "./remote-repair.ts";
import type { VolumeStatus } from "../../transport/protocol/index.ts";
import { repairMachine, type RepairOutcome } from "../repair/index.ts";
import type { AuditEvent, ControllerTimer, RepairLaunch } from "./controller-ports.ts";
import type { ControllerData } from "./controller-state.ts";
import type { ControllerEffect } from "./controller-effects.ts";
import { controllerStep, type ControllerStepEvent } from "./controller-step.ts";

/**
 * The Controller actor of one volume. Lifecycle: starting → waiting ⇄ evaluating → stopped.
 * Its context is plain data: `state` (controller/controller-state.ts) changes only through the pure
 * `controllerStep`, which folds receipts, writer progress and admission requests in whatever state
 * the actor is in (cheap, per message) and answers failover and repair-worker requests; the effects
 * it returns (counts, release frontiers, the status document, answers, commits whose outcome comes
 * back as an event) run through the `execute` action. startController provides the executors
 * (controller/controller-executors.ts), which alone reach the transport, the control log and the clock.
 * Policy evaluation, release commits and the status document happen only in `evaluating`, entered
 * at most once per `evalIntervalMs` (the `interval` delay) and only when something changed (or the
 * log moved on) — never on the per-I/O path: its phases `reading` and `deciding` are invoked
 * children (the log read; evaluation and commits), and the round's end publishes the document.
 * Each round's log read also notices newly committed declare-failure events; when the round is
 * done `startRepairs` starts one repair task per failure (or, without a repair configuration, the
 * status document reports the failure as "repair needed"). Each prepared repair comes back as
 * `repair.launch` and becomes a CHILD actor with id `repair.<repairId>`: a `repairMachine` reading
 * and committing through the controller in-process, or `remoteRepair`, which hands it to a repair
 * worker over NATS. The child's output arrives as `xstate.done.actor.repair.<repairId>` and
 * `recordRepair` records it.
 */

/** The id of a repair's child actor (its done event is `xstate.done.actor.repair.<repairId>`). */
export const repairChildId = (repairId: string): string => `repair.${repairId}`;

/** Lifecycle states, as an enumeration. */
export const ControllerState = {
  Starting: "starting",
  Waiting: "waiting",
  Evaluating: "evaluating",
  Stopped: "stopped",
  Failed: "failed",
} as const;
export type ControllerState = (typeof ControllerState)[keyof typeof ControllerState];

/** The phases of an evaluation round (substates of `evaluating`). */
export const RoundPhase = { Reading: "reading", Deciding: "deciding" } as const;

/** The lifecycle state of a snapshot value (`evaluating` whatever its phase). */
export const lifecycleOf = (value: string | Record<string, unknown>): string =>
  typeof value === "string" ? value : Object.keys(value)[0]!;

export interface ControllerContext {
  /** Receipts, writer progress, admitted incarnations: plain data changed only by `controllerStep`. */
  readonly state: ControllerData;
  readonly intervalMs: number;
  /** The cadences of coverage checks and retention audits (ms). */
  readonly coverageCheckMs: number;
  readonly auditEveryMs: number;
  /** Evaluation requested explicitly (tests, operator) even if nothing changed. */
  forced: boolean;
  lastError?: string;
}

export type ControllerInput = Omit<ControllerContext, "forced" | "lastError">;

export type ControllerEvent =
  | Exclude<ControllerStepEvent, { type: "round.started" | "round.done" }>
  | { type: "repair.launch"; launch: RepairLaunch }
  | DoneActorEvent<RepairOutcome, `repair.${string}`>
  | ControllerTimer
  | TimerArm<ControllerTimer>
  | { type: "evaluate.now" }
  | { type: "stop" }
  | AuditEvent;

const launchOf = (event: ControllerEvent): RepairLaunch => {
  assertEvent(event, "repair.launch");
  return event.launch;
};

/** What a repair worker is handed (custody run repair): the task, and how long it may take. */
function remoteInput({ input, workerTimeoutMs }: RepairLaunch) {
  const task: RemoteRepairTask = {
    repairId: input.repairId,
    volume: input.volume,
    lanes: input.lanes,
    failed: input.failed,
    replacement: input.replacement,
    bandwidthBytesPerSec: input.repairBandwidthBytesPerSec,
    receiptTimeoutMs: input.receiptTimeoutMs,
  };
  return { transport: input.transport, task, timeoutMs: workerTimeoutMs };
}

const ingest = {
  "nats.receipt": { actions: "step" },
  "nats.event": { actions: "step" },
  "nats.admit": { actions: "step" },
  "nats.repair": { actions: "step" },
  "nats.failover": { actions: "step" },
  "timer.coverage": { actions: ["checkCoverage", "armNextCoverageCheck"] },
  "evaluate.now": { actions: "force" },
  "timer.audit": { actions: ["challengeHolders", "armNextAudit"] },
  "audit.judged": { actions: "recordAuditVerdict" },
} as const;

const notProvided = (what: string) => (): never => {
  throw new Error(`controller machine: ${what} is supplied by startController (machine.provide)`);
};

export const controllerMachine = setup({
  types: {
    context: {} as ControllerContext,
    events: {} as ControllerEvent,
    input: {} as ControllerInput,
  },
  actors: {
    // Folds the control log and subscribes (ControllerCore.start).
    startCore: fromPromise<void>(async () => notProvided("startCore")()),
    // A round's first phase: the log read again, declared failures noticed, overdue holds ended.
    readLog: fromPromise<void>(async () => notProvided("readLog")()),
    // Its second: evaluation, coverage, persistence, release commits; the status document is its output.
    decide: fromPromise<VolumeStatus>(async () => notProvided("decide")()),
    repair: repairMachine,
    remoteRepair: fromPromise<RepairOutcome, { transport: Transport; task: RemoteRepairTask; timeoutMs: number }>(
      ({ input }) => requestRemoteRepair(input.transport, input.task, input.timeoutMs),
    ),
  },
  // The executors: startController provides them (closures over the controller's ports and parts).
  actions: {
    // Runs one effect of the step (counters, release frontiers, commits whose outcome returns as an event).
    execute: (_, _effect: ControllerEffect) => notProvided("execute")(),
    // Coverage repair between rounds, on the current ledger and the log as last folded.
    checkCoverage: notProvided("checkCoverage"),
    // Retention audits: a round of challenges starts; a finished audit's verdict is folded.
    challengeHolders: notProvided("challengeHolders"),
    recordAuditVerdict: notProvided("recordAuditVerdict"),
    // Declared failures noticed by the round's log refresh get one repair task each (keyed by
    // their control-log sequence; a second start of the same one is refused).
    startRepairs: notProvided("startRepairs"),
    recordRepair: notProvided("recordRepair"),
    stopCore: notProvided("stopCore"),
    // The cadences are the machine's own delayed events: the first is asked for (`timer.arm`),
    // each tick raises the next, and a stopped controller has none left.
    armTimer: armTimer<ControllerContext, ControllerEvent, "interval">(),
    armNextCoverageCheck: raise({ type: "timer.coverage" }, { delay: ({ context }) => context.coverageCheckMs }),
    armNextAudit: raise({ type: "timer.audit" }, { delay: ({ context }) => context.auditEveryMs }),
    force: assign({ forced: true }),
    // A prepared repair becomes a child actor `repair.<repairId>`: a repairMachine here, or a worker's.
    spawnLocalRepair: spawnChild("repair", {
      id: ({ event }) => repairChildId(launchOf(event).input.repairId),
      input: ({ event }) => launchOf(event).input,
    }),
    spawnRemoteRepair: spawnChild("remoteRepair", {
      id: ({ event }) => repairChildId(launchOf(event).input.repairId),
      input: ({ event }) => remoteInput(launchOf(event)),
    }),
  },
  guards: {
    remoteLaunch: ({ event }) => launchOf(event).remote,
    changed: ({ context }) => context.state.dirty || context.forced,
    // The log has entries this controller has not folded (an operator's failure or hold, another controller).
    logAhead: notProvided("logAhead"),
  },
  delays: {
    interval: ({ context }) => context.intervalMs,
  },
})
  // The actions that enqueue `execute` are typed against it, so they come in a second step.
  .extend<{ step: undefined; beginRound: undefined; endRound: undefined; noteError: undefined }>({
    actions: {
      // The pure step folds the event into the plain data; its effects run through `execute`.
      step: enqueueActions(({ context, event, enqueue }) => {
        const { state, effects } = controllerStep(context.state, event as ControllerStepEvent);
        if (state !== context.state) enqueue.assign({ state });
        for (const e of effects) enqueue({ type: "execute", params: e });
      }),
      // An evaluation round begins: what changed so far is in it.
      beginRound: enqueueActions(({ context, enqueue }) => {
        const { state } = controllerStep(context.state, { type: "round.started" });
        enqueue.assign({ state, forced: false });
      }),
      // A round ended: its status document is kept and published (an effect of the step).
      endRound: enqueueActions(({ context, event, enqueue }) => {
        const status = (event as unknown as DoneActorEvent<VolumeStatus>).output;
        const { state, effects } = controllerStep(context.state, { type: "round.done", status });
        enqueue.assign({ state });
        for (const e of effects) enqueue({ type: "execute", params: e });
      }),
      noteError: enqueueActions(({ event, enqueue }) => {
        const err = (event as { error?: unknown }).error;
        enqueue.assign({ lastError: err instanceof Error ? err.message : String(err) });
        enqueue({ type: "execute", params: { type: "count", name: "evaluation_failed" } });
      }),
    },
  })
  .createMachine({
    id: "controller",
    context: ({ input }) => ({ ...input, forced: false }),
    initial: ControllerState.Starting,
    on: {
      stop: `.${ControllerState.Stopped}`,
      "repair.launch": [{ guard: "remoteLaunch", actions: "spawnRemoteRepair" }, { actions: "spawnLocalRepair" }],
      "xstate.done.actor.repair.*": { actions: "recordRepair" },
      "timer.arm": { actions: "armTimer" },
      // A tick before the start finished does nothing but keep the cadence.
      "timer.coverage": { actions: "armNextCoverageCheck" },
      "timer.audit": { actions: "armNextAudit" },
      "control.folded": { actions: "step" },
      nudge: { actions: "step" },
      sighted: { actions: "step" },
      "history.trim": { actions: "step" },
      "admission.committed": { actions: "step" },
      "admission.failed": { actions: "step" },
      "releases.planned": { actions: "step" },
      "release.committed": { actions: "step" },
      "base.added": { actions: "step" },
      "recovery.begun": { actions: "step" },
      "recovery.ended": { actions: "step" },
      "verdicts.noted": { actions: "step" },
      connection: { actions: "step" },
      // Requests' work done: answered through the step (controller-requests.ts).
      "failover.committed": { actions: "step" },
      "failover.failed": { actions: "step" },
      "repair.answered": { actions: "step" },
      "repair.failed": { actions: "step" },
    },
    states: {
      [ControllerState.Starting]: {
        invoke: {
          src: "startCore",
          onDone: ControllerState.Evaluating,
          onError: { target: ControllerState.Failed, actions: "noteError" },
        },
      },
      [ControllerState.Waiting]: {
        on: ingest,
        after: {
          interval: [
            { guard: or(["changed", "logAhead"]), target: ControllerState.Evaluating },
            { target: ControllerState.Waiting, reenter: true },
          ],
        },
      },
      // A failed phase (control log unreachable, conflict) ends the round; the next one retries.
      [ControllerState.Evaluating]: {
        on: ingest,
        entry: "beginRound",
        initial: RoundPhase.Reading,
        states: {
          [RoundPhase.Reading]: {
            invoke: {
              src: "readLog",
              onDone: RoundPhase.Deciding,
              onError: { target: `#controller.${ControllerState.Waiting}`, actions: "noteError" },
            },
          },
          [RoundPhase.Deciding]: {
            invoke: {
              src: "decide",
              onDone: { target: `#controller.${ControllerState.Waiting}`, actions: ["endRound", "startRepairs"] },
              onError: { target: `#controller.${ControllerState.Waiting}`, actions: "noteError" },
            },
          },
        },
      },
      [ControllerState.Failed]: { on: ingest },
      [ControllerState.Stopped]: { type: "final", entry: "stopCore" },
    },
  });
