import { createActor, waitFor, type Actor } from "xstate";
import { CustodyError, type Counters } from "../../core/index.ts";
import type { ControlState, Holding, HoldingFilter } from "../../custody/index.ts";
import type { BaseSnapshot, EvaluationReport, EvaluationState, HolderAuditRecord } from "../../policies/index.ts";
import type { RepairStatus, VolumeStatus } from "../../transport/protocol/index.ts";
import type { RepairPort } from "../repair/index.ts";
import { inProcessRepairPort } from "./in-process-repair-port.ts";
import { bootstrapVolume } from "./volume-bootstrap.ts";
import { controllerMachine, ControllerState, lifecycleOf } from "./controller.machine.ts";
import type { ControllerConfig } from "./controller-config.ts";
import { ControllerCore } from "./controller-core.ts";
import { initialControllerData } from "./controller-state.ts";
import { providedControllerMachine } from "./controller-executors.ts";
import type { ControllerPorts, HolderAdmission, ReleaseAudit } from "./controller-ports.ts";

/** A running controller of one volume. */
export interface Controller {
  readonly actor: Actor<typeof controllerMachine>;
  state(): string;
  readonly id: string;
  readonly config: ControllerConfig;
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
  /** The evaluation input as it stands now (fresh evidence, the folded log). */
  evaluationState(): EvaluationState;
  /** The last evaluation's per-scenario report (undefined before the first). */
  report(): EvaluationReport | undefined;
  /** Folded commit runs kept in memory below every cut (the footprint the simulator checks stays bounded). */
  commitRunCount(): number;
  /** Each holder's retention-audit record (empty without `retentionAudit`). */
  auditRows(): readonly HolderAuditRecord[];
  /** Reads the control log again and returns what it folded to. */
  refreshControlState(): Promise<ControlState>;
  /** Asks for an evaluation round at the next interval even if nothing changed. */
  evaluateSoon(): void;
  /**
   * Commits the first admissions and obligations of a fresh control log (what `custody bootstrap` does for a
   * deployment).
   */
  bootstrap(holders: readonly HolderAdmission[], responsible: readonly string[], fromSeq?: number): Promise<void>;
  /** A base snapshot became available at a holder (releases may then go to it). */
  addBase(base: BaseSnapshot): void;
  /** The repair port over this controller, for a repair task run in this process. */
  repairPort(): RepairPort;
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
  const initial = initialControllerData(config);
  const core = new ControllerCore(
    config,
    ports,
    // Outcomes of work in flight when the controller stops (a commit, a round) go nowhere.
    (e) => {
      if (actor?.getSnapshot().status === "active") actor.send(e);
    },
    () => actor?.getSnapshot().context.state ?? initial,
  );
  actor = createActor(providedControllerMachine(core), {
    input: {
      state: initial,
      intervalMs: config.evalIntervalMs ?? 100,
      coverageCheckMs: core.coverageCheckMs,
      auditEveryMs: config.retentionAudit?.everyMs ?? 0,
    },
    clock: ports.clock,
  });
  actor.start();
  const a = actor;
  const snap = await waitFor(a, (s) => s.value !== ControllerState.Starting);
  if (snap.value === ControllerState.Failed) {
    a.stop();
    throw new ControllerStartError(`controller ${config.controllerId} failed to start: ${snap.context.lastError}`);
  }
  return {
    actor: a,
    state: () => lifecycleOf(a.getSnapshot().value),
    id: config.controllerId,
    config,
    counters: core.counters,
    controlState: () => core.follower.state,
    status: () => a.getSnapshot().context.state.status,
    holdings: (filter) => core.ledger.holdings(filter),
    repairs: () => core.repairs,
    releaseAudits: () => core.audits,
    takeEvalDurations: () => core.takeEvalDurations(),
    evaluationState: () => core.currentState(),
    report: () => core.report,
    auditRows: () => core.retentionAudits?.rows() ?? [],
    commitRunCount: () => core.commitRunCount,
    refreshControlState: () => core.follower.refresh(),
    evaluateSoon: () => a.send({ type: "evaluate.now" }),
    bootstrap: (holders, responsible, fromSeq) => bootstrapVolume(core, holders, responsible, fromSeq),
    addBase: (base) => core.addBase(base),
    repairPort: () => inProcessRepairPort(core),
    stop: () => {
      if (a.getSnapshot().status === "active") a.send({ type: "stop" });
      a.stop();
    },
  };
}
