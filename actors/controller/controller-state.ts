import type { VolumeStatus } from "../../transport/protocol/index.ts";
import type { BaseSnapshot, VerdictMemory } from "../../policies/index.ts";
import type { ControllerConfig } from "./controller-config.ts";
import type { RangePairs } from "./controller-ledger.ts";
import { EMPTY_HISTORY, type CommitHistoryState } from "./commit-history.ts";
import { EMPTY_LEDGER, type PlainLedger } from "./controller-ledger.ts";
import type { FencedSighting } from "./fenced-speakers.ts";
import { initialReleaseMemory, type ReleaseMemory } from "./release-plan.ts";

/**
 * What the controller's machine holds as plain data and changes only through its pure step
 * (controller-step.ts): the verified receipts per holder and lane, the writer's heads and commit
 * runs, the holders' admitted incarnations, admissions in flight, superseded incarnations still
 * speaking, and whether anything changed since the last evaluation round. (Named `ControllerData`
 * because `ControllerState` is the machine's lifecycle enumeration, which callers already import.)
 */
export interface ControllerData {
  readonly volume: string;
  readonly lanes: readonly string[];
  /** Holders of the topology and the configured standbys: admission requests of others are ignored. */
  readonly holders: readonly string[];
  readonly standbys: readonly string[];
  readonly ledger: PlainLedger;
  /** The writer's highest reported sequence per lane. */
  readonly heads: Readonly<Record<string, number>>;
  readonly history: CommitHistoryState;
  /** The incarnation of each holder the control log admitted, as last noted. */
  readonly admitted: Readonly<Record<string, number>>;
  /** Admission commits in flight (`holder#incarnation`), so repeated requests commit once. */
  readonly admitting: readonly string[];
  readonly fenced: readonly FencedSighting[];
  /** Base snapshots releases may rely on (the configured ones, and those announced since). */
  readonly bases: readonly BaseSnapshot[];
  /** Recoveries and repairs reading ranges now (releases of them are refused), by id. */
  readonly recoveries: Readonly<Record<string, PlainRecovery>>;
  /** Since when each scenario's overdue writes exceed its allowance (the steady verdicts' grace). */
  readonly verdicts: VerdictMemory;
  /** Every holder's release frontier is re-sent at the next log read (after a reconnect). */
  readonly frontiersDue: boolean;
  /** What release decisions remember between rounds (see release-plan.ts). */
  readonly releases: ReleaseMemory;
  /** The newest status document (undefined before the first round ends). */
  readonly status?: VolumeStatus;
  /** Something changed since the last evaluation round began. */
  readonly dirty: boolean;
}

/** A recovery in flight (policies' RecoveryInFlight) with its ranges as pairs. */
export interface PlainRecovery {
  readonly id: string;
  readonly lane: string;
  readonly ranges: RangePairs;
  readonly sources?: readonly string[] | undefined;
}

export function initialControllerData(config: ControllerConfig): ControllerData {
  return {
    volume: config.topology.volume,
    lanes: [...config.topology.lanes],
    holders: Object.keys(config.topology.holderSites),
    standbys: (config.repair?.standby ?? []).map((s) => s.holderId),
    ledger: EMPTY_LEDGER,
    heads: {},
    history: EMPTY_HISTORY,
    admitted: {},
    admitting: [],
    fenced: [],
    bases: [...config.topology.bases],
    recoveries: {},
    verdicts: {},
    frontiersDue: false,
    releases: initialReleaseMemory(config),
    dirty: true,
  };
}
