import { createActor, waitFor, type Actor } from "xstate";
import { CustodyError, type Counters } from "../core/index.ts";
import type { ControlState, Holding, HoldingFilter } from "../custody/index.ts";
import type { RepairStatus, VolumeStatus } from "../protocol/index.ts";
import { controllerMachine, ControllerState } from "./controller.machine.ts";
import type { ControllerConfig } from "./controller/controller-config.ts";
import { ControllerCore } from "./controller/controller-core.ts";
import type { ControllerPorts, ReleaseAudit } from "./controller/controller-ports.ts";

/** A running controller of one volume. */
export interface Controller {
  readonly actor: Actor<typeof controllerMachine>;
  readonly core: ControllerCore;
  state(): string;
  readonly id: string;
  readonly counters: Counters;
  /** The control log as this controller last folded and verified it. */
  controlState(): ControlState;
  /** The latest status document (undefined before the first evaluation). */
  status(): VolumeStatus | undefined;
  /** Every holder's verified receipted custody in the ledger. */
  holdings(filter?: HoldingFilter): readonly Holding[];
  /** Every declared failure seen and what became of its repair, by control-log sequence. */
  repairs(): readonly RepairStatus[];
  /** The last MAX_AUDITS committed releases, each with the evaluation state it was decided on. */
  releaseAudits(): readonly ReleaseAudit[];
  /** Durations (ms) of the evaluations since the previous call. */
  takeEvalDurations(): number[];
  /** Asks for an evaluation round at the next interval even if nothing changed. */
  evaluateSoon(): void;
  stop(): void;
}

/** Thrown when the controller cannot fold its control log or subscribe at start. */
export class ControllerStartError extends CustodyError {
  constructor(message: string) {
    super("controller_start_failed", message, {});
  }
}

/** Starts a controller; resolves once it has folded the control log and subscribed. Throws ControllerStartError. */
export async function startController(config: ControllerConfig, ports: ControllerPorts): Promise<Controller> {
  let actor: Actor<typeof controllerMachine> | undefined;
  const core = new ControllerCore(config, ports, (e) => actor?.send(e));
  actor = createActor(controllerMachine, { input: { core, intervalMs: config.evalIntervalMs ?? 100 }, clock: ports.clock });
  actor.start();
  const a = actor;
  const snap = await waitFor(a, (s) => s.value !== ControllerState.Starting);
  if (snap.value === ControllerState.Failed) {
    a.stop();
    throw new ControllerStartError(`controller ${config.controllerId} failed to start: ${snap.context.lastError}`);
  }
  return {
    actor: a,
    core,
    state: () => String(a.getSnapshot().value),
    id: config.controllerId,
    counters: core.counters,
    controlState: () => core.follower.state,
    status: () => core.status,
    holdings: (filter) => core.ledger.holdings(filter),
    repairs: () => core.repairs,
    releaseAudits: () => core.audits,
    takeEvalDurations: () => core.takeEvalDurations(),
    evaluateSoon: () => a.send({ type: "evaluate.now" }),
    stop: () => {
      if (a.getSnapshot().status === "active") a.send({ type: "stop" });
      a.stop();
    },
  };
}
