import { assertEvent, enqueueActions, fromPromise, raise, setup, type DoneActorEvent } from "xstate";
import type { TimerArm } from "../core/index.ts";
import { armTimer } from "./machine-timer.ts";
import type { InboundMessage, Transport } from "../transport/index.ts";
import type { ControllerCore } from "./controller/controller-core.ts";
import { requestRemoteRepair, type RemoteRepairTask } from "./controller/remote-repair.ts";
import type { VolumeStatus } from "../transport/protocol/index.ts";
import { repairMachine, type RepairOutcome } from "./repair/repair.machine.ts";
import type { AuditEvent, ControllerTimer, RepairLaunch } from "./controller/controller-ports.ts";

/**
 * The Controller actor of one volume. Lifecycle: starting → waiting ⇄ evaluating → stopped.
 * Receipts and writer progress are folded in whatever state the actor is in (cheap, per message);
 * policy evaluation, release commits and the status document happen only in `evaluating`, entered
 * at most once per `evalIntervalMs` and only when something changed — never on the per-I/O path.
 * Each round's control-log refresh also notices newly committed declare-failure events; when the
 * round is done the `startRepairs` action starts one repair task per failure (or, without a repair
 * configuration, the status document reports the failure as "repair needed"). Each prepared repair
 * comes back as `repair.launch`, and `spawnRepair` starts it as a CHILD actor with id
 * `repair.<repairId>`: a `repairMachine` reading and committing through the controller in-process,
 * or `remoteRepair`, which hands it to a repair worker over NATS. The child's output arrives as
 * `xstate.done.actor.repair.<repairId>` and `recordRepair` records it. Requests of repairs handed
 * to a worker arrive as `nats.repair` and `answerRepair` answers them. A new writer's or the
 * operator's failover request arrives as `nats.failover` and `answerFailover` checks it, commits the
 * failover and answers with the plan (in any state after the start, like the other requests).
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

export interface ControllerContext {
  readonly core: ControllerCore;
  readonly intervalMs: number;
  /** Evaluation requested explicitly (tests, operator) even if nothing changed. */
  forced: boolean;
  lastError?: string;
}

export type ControllerEvent =
  | { type: "nats.receipt"; msg: InboundMessage }
  | { type: "nats.event"; msg: InboundMessage }
  | { type: "nats.admit"; msg: InboundMessage }
  | { type: "nats.repair"; msg: InboundMessage }
  | { type: "nats.failover"; msg: InboundMessage }
  | { type: "repair.launch"; launch: RepairLaunch }
  | DoneActorEvent<RepairOutcome, `repair.${string}`>
  | ControllerTimer
  | TimerArm<ControllerTimer>
  | { type: "evaluate.now" }
  | { type: "stop" }
  | AuditEvent;

const ingest = {
  "nats.receipt": { actions: "foldReceipt" },
  "nats.event": { actions: "foldEvent" },
  "nats.admit": { actions: "admitIncarnation" },
  "nats.repair": { actions: "answerRepair" },
  "nats.failover": { actions: "answerFailover" },
  "timer.coverage": { actions: ["checkCoverage", "armNextCoverageCheck"] },
  "evaluate.now": { actions: "force" },
  "timer.audit": { actions: ["challengeHolders", "armNextAudit"] },
  "audit.judged": { actions: "recordAuditVerdict" },
} as const;

export const controllerMachine = setup({
  types: {
    context: {} as ControllerContext,
    events: {} as ControllerEvent,
    input: {} as { core: ControllerCore; intervalMs: number },
  },
  actors: {
    startCore: fromPromise(async ({ input }: { input: { core: ControllerCore } }) => input.core.start()),
    evaluate: fromPromise<VolumeStatus, { core: ControllerCore }>(async ({ input }) => input.core.evaluate()),
    repair: repairMachine,
    remoteRepair: fromPromise<RepairOutcome, { transport: Transport; task: RemoteRepairTask; timeoutMs: number }>(
      ({ input }) => requestRemoteRepair(input.transport, input.task, input.timeoutMs),
    ),
  },
  actions: {
    foldReceipt: ({ context, event }) => {
      assertEvent(event, "nats.receipt");
      context.core.handleReceipt(event.msg);
    },
    foldEvent: ({ context, event }) => {
      assertEvent(event, "nats.event");
      context.core.handleEvent(event.msg);
    },
    checkCoverage: ({ context }) => context.core.checkCoverage(),
    // The cadences are the machine's own delayed events: the core asks for the first one
    // (`timer.arm`), each tick raises the next, and a stopped controller has none left.
    armTimer: armTimer<ControllerContext, ControllerEvent, "interval">(),
    armNextCoverageCheck: raise({ type: "timer.coverage" }, { delay: ({ context }) => context.core.coverageCheckMs }),
    armNextAudit: raise(
      { type: "timer.audit" },
      { delay: ({ context }) => context.core.retentionAudits?.everyMs ?? 0 },
    ),
    // Retention audits: a round of challenges starts; a finished audit's verdict is folded.
    challengeHolders: ({ context }) => context.core.retentionAudits?.round(),
    recordAuditVerdict: ({ context, event }) => {
      assertEvent(event, "audit.judged");
      context.core.retentionAudits?.judged(event);
    },
    admitIncarnation: ({ context, event }) => {
      assertEvent(event, "nats.admit");
      context.core.handleAdmission(event.msg);
    },
    force: ({ context }) => {
      context.forced = true;
    },
    clearForce: ({ context }) => {
      context.forced = false;
    },
    noteError: ({ context, event }) => {
      const err = (event as { error?: unknown }).error;
      context.lastError = err instanceof Error ? err.message : String(err);
      context.core.counters.inc("evaluation_failed");
    },
    stopCore: ({ context }) => context.core.stop(),
    // Declared failures noticed by the round's log refresh get one repair task each (keyed by
    // their control-log sequence; the core refuses a second start of the same one).
    startRepairs: ({ context }) => context.core.startRepairs(),
    spawnRepair: enqueueActions(({ event, enqueue }) => {
      assertEvent(event, "repair.launch");
      const { input, remote, workerTimeoutMs } = event.launch;
      const id = repairChildId(input.repairId);
      if (!remote) return enqueue.spawnChild("repair", { id, input });
      const task: RemoteRepairTask = {
        repairId: input.repairId,
        volume: input.volume,
        lanes: input.lanes,
        failed: input.failed,
        replacement: input.replacement,
        bandwidthBytesPerSec: input.repairBandwidthBytesPerSec,
        receiptTimeoutMs: input.receiptTimeoutMs,
      };
      enqueue.spawnChild("remoteRepair", {
        id,
        input: { transport: input.transport, task, timeoutMs: workerTimeoutMs },
      });
    }),
    recordRepair: ({ context, event }) => {
      void context.core.settleRepair((event as DoneActorEvent<RepairOutcome>).output);
    },
    answerRepair: ({ context, event }) => {
      assertEvent(event, "nats.repair");
      context.core.handleRepairRequest(event.msg);
    },
    // A failover request: checked, committed (see failover.ts) and answered; never throws.
    answerFailover: ({ context, event }) => {
      assertEvent(event, "nats.failover");
      void context.core.failovers.handle(event.msg);
    },
  },
  guards: {
    // Entries someone else committed (an operator's failure or hold, another controller) need a round too.
    due: ({ context }) =>
      context.core.dirty ||
      context.forced ||
      (context.core.ports.store.seenHead?.() ?? 0) > context.core.follower.state.lastSeq,
  },
  delays: {
    interval: ({ context }) => context.intervalMs,
  },
}).createMachine({
  id: "controller",
  context: ({ input }) => ({ core: input.core, intervalMs: input.intervalMs, forced: false }),
  initial: ControllerState.Starting,
  on: {
    stop: `.${ControllerState.Stopped}`,
    "repair.launch": { actions: "spawnRepair" },
    "xstate.done.actor.repair.*": { actions: "recordRepair" },
    "timer.arm": { actions: "armTimer" },
    // A tick before the start finished does nothing but keep the cadence.
    "timer.coverage": { actions: "armNextCoverageCheck" },
    "timer.audit": { actions: "armNextAudit" },
  },
  states: {
    [ControllerState.Starting]: {
      invoke: {
        src: "startCore",
        input: ({ context }) => ({ core: context.core }),
        onDone: ControllerState.Evaluating,
        onError: { target: ControllerState.Failed, actions: "noteError" },
      },
    },
    [ControllerState.Waiting]: {
      on: ingest,
      after: {
        interval: [
          { guard: "due", target: ControllerState.Evaluating },
          { target: ControllerState.Waiting, reenter: true },
        ],
      },
    },
    [ControllerState.Evaluating]: {
      on: ingest,
      entry: "clearForce",
      invoke: {
        src: "evaluate",
        input: ({ context }) => ({ core: context.core }),
        onDone: { target: ControllerState.Waiting, actions: "startRepairs" },
        // A failed round (control log unreachable, conflict) changes nothing; the next one retries.
        onError: { target: ControllerState.Waiting, actions: "noteError" },
      },
    },
    [ControllerState.Failed]: { on: ingest },
    [ControllerState.Stopped]: { type: "final", entry: "stopCore" },
  },
});
