import { assertEvent, fromPromise, type DoneActorEvent } from "xstate";
import { controllerMachine } from "./controller.machine.ts";
import { repairMachineFor, type RepairOutcome } from "../repair/index.ts";
import type { ControllerCore } from "./controller-core.ts";
import { inProcessRepairPort } from "./in-process-repair-port.ts";

/**
 * The controller's machine with its executors: the only code that reaches the transport, the
 * control log and the clock on the machine's behalf. Each is a closure over the controller's parts
 * (ControllerCore); none of them sits in the machine's context.
 */
export function providedControllerMachine(core: ControllerCore) {
  return controllerMachine.provide({
    actors: {
      startCore: fromPromise(() => core.start()),
      readLog: fromPromise(() => core.readLog()),
      decide: fromPromise(() => core.decide()),
      // A repair child reads and commits through the controller in process (its RepairPort).
      repair: repairMachineFor({
        port: inProcessRepairPort(core),
        transport: core.ports.transport,
        clock: core.ports.clock,
      }),
    },
    actions: {
      execute: (_, effect) => core.execute(effect),
      checkCoverage: () => core.checkCoverage(),
      challengeHolders: () => core.retentionAudits?.round(),
      recordAuditVerdict: ({ event }) => {
        assertEvent(event, "audit.judged");
        core.retentionAudits?.judged(event);
      },
      startRepairs: () => core.startRepairs(),
      recordRepair: ({ event }) => void core.settleRepair((event as DoneActorEvent<RepairOutcome>).output),
      stopCore: () => core.stop(),
    },
    guards: {
      logAhead: () => (core.ports.store.seenHead?.() ?? 0) > core.follower.state.lastSeq,
    },
  });
}
