import type { TimerArm } from "../../core/index.ts";
import type { Clock } from "../../core/index.ts";
import type { Counters } from "../../core/index.ts";
import type { ControlLogStore } from "../../custody/index.ts";
import type { ControlSigner, ControlTrust } from "../../custody/index.ts";
import type { EvaluationState } from "../../policies/index.ts";
import type { authorizeReleases, ReleaseRequest } from "../../policies/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { ReplacementAdmission } from "../repair/index.ts";
import type { AuditOutcome } from "../../policies/index.ts";
import type { RepairInput } from "../repair/index.ts";
import type { StandbyHolder } from "./controller-config.ts";

/**
 * How the controller reaches the world to repair: it starts (or finds) a standby holder and returns
 * its admission. Repairs read surviving units over NATS from the holders the ledger shows holding them.
 */
export interface RepairLauncher {
  /** Starts the standby holder (not yet admitted) and returns its admission record. */
  prepare(standby: StandbyHolder): Promise<HolderAdmission>;
}

export interface ControllerPorts {
  transport: Transport;
  clock: Clock;
  /** The region's control log (JetStream in production). */
  store: ControlLogStore;
  counters?: Counters;
  /** Used with `config.repair` to repair declared failures automatically. */
  repair?: RepairLauncher;
  /**
   * Test-only fault switch: replaces `authorizeReleases`. The simulator's weakened-release test
   * passes one to prove its checks can fail; no configuration file or CLI flag reaches this port.
   */
  authorizeReleases?: typeof authorizeReleases;
  /** A signed control log: only entries its operators (and the controllers they admitted) signed count. */
  trust?: ControlTrust;
  /** This controller's signing key (its id must be `config.controllerId`); needed to commit to a signed log. */
  signer?: ControlSigner;
}

/** One committed release, with the exact evaluation state it was decided on (for audits and tests). */
export interface ReleaseAudit {
  readonly state: EvaluationState;
  /** Every request granted in the same joint decision, in order (this one included). */
  readonly grantedTogether: readonly ReleaseRequest[];
  readonly request: ReleaseRequest;
  readonly controlSeq: number;
}

/** Release audits kept in memory (see `ControllerCore.audits`). */
export const MAX_AUDITS = 32;
/** Sequences one folded commit run below every cut may span (see `trimCommits`). */
export const COARSE_RUN_SEQS = 65_536;

/** A holder being admitted by `bootstrap` or a repair. */
export type HolderAdmission = ReplacementAdmission;

/** The controller's cadences: delayed events its machine raises to itself (`timer.arm` asks for the first). */
export type ControllerTimer = { type: "timer.coverage" } | { type: "timer.audit" };

/** A repair ready to run: in-process as a child `repairMachine`, or handed to a worker. */
export interface RepairLaunch {
  readonly input: RepairInput;
  /** Hand it to a repair worker (`custody run repair`) instead of running it here. */
  readonly remote: boolean;
  /** How long a worker may take before the repair counts as failed (ms). */
  readonly workerTimeoutMs: number;
}

/**
 * A finished audit, or the request for the next round's timer, handed back to the controller's
 * actor (the machine raises `timer.audit` to itself, and again after each round).
 */
export type AuditEvent =
  | TimerArm<{ type: "timer.audit" }>
  | {
      type: "audit.judged";
      holder: string;
      outcome: AuditOutcome;
      reason: string | undefined;
      atMs: number;
      bytesRead: number;
      cpuMicros: number;
    };
