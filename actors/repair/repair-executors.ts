import { fromPromise } from "xstate";
import { repairMachine, type RepairStepInput } from "./repair.machine.ts";
import type { RepairPorts } from "./repair-port.ts";
import type { RepairTask } from "./repair-state.ts";
import {
  activateReplacement,
  admitReplacement,
  checkReceipts,
  copyMissing,
  endProtections,
  surveyMissing,
} from "./repair-steps.ts";

/**
 * The repair machine with its executors supplied (issue #48): each invoked child runs one step of
 * repair-steps.ts over `ports`, the final states end the protections through the port, and the
 * receipts are looked at again every `port.pollMs`. Whoever starts a repair (runRepairTask, the
 * controller for its own child repairs) starts this machine with the repair's plain settings.
 */
export function repairMachineFor(ports: RepairPorts): typeof repairMachine {
  return repairMachine.provide({
    actors: {
      survey: fromPromise(({ input }: { input: RepairTask }) => surveyMissing(ports, input)),
      admit: fromPromise(({ input }: { input: RepairTask }) => admitReplacement(ports, input)),
      copy: fromPromise(({ input }: { input: RepairStepInput }) => copyMissing(ports, input.task, input.missing)),
      checkReceipts: fromPromise(({ input }: { input: RepairStepInput }) =>
        checkReceipts(ports, input.task, input.missing),
      ),
      activate: fromPromise(({ input }: { input: RepairStepInput }) =>
        activateReplacement(ports, input.task, input.missing),
      ),
    },
    actions: { endProtections: (_, { ids }) => endProtections(ports, ids) },
    delays: { receiptPoll: ports.port.pollMs },
  });
}
