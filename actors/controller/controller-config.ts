import type {
  BaseSnapshot,
  ControlPlanePlacement,
  KeyAuthority,
  Link,
  MetadataQuorum,
  RecoveryParams,
} from "../../policies/index.ts";
import type { Scenario, Timeline } from "../../policies/index.ts";
import type { Site } from "../../policies/index.ts";
import type { SpendConfigInput } from "../../policies/index.ts";
import type { ProtectedRamLayout } from "./protected-ram-layout.ts";
import type { RetentionWindow } from "./retention-window.ts";
import type { RoutesConfig } from "./controller-routes.ts";

/**
 * What a regional controller knows about one volume besides receipts: where everything runs,
 * the named scenarios of its contract, recovery parameters, bases, key authorities and links.
 * Receipts (through the ledger) and writer progress fill in the rest of the evaluation state.
 */
export interface VolumeTopology {
  readonly volume: string;
  /**
   * The volume's size in 4 KiB blocks, as its deployment declares it (`custody init` writes it).
   * The controller does not use it; `custody recover` builds a volume of this size.
   */
  readonly blockCount?: number;
  readonly lanes: readonly string[];
  readonly writerSite: string;
  readonly sites: readonly Site[];
  /** Holder id → site id, for every holder whose receipts may count. */
  readonly holderSites: Readonly<Record<string, string>>;
  readonly bases: readonly BaseSnapshot[];
  readonly keyAuthorities: readonly KeyAuthority[];
  readonly metadataQuorum?: MetadataQuorum;
  readonly links: readonly Link[];
  readonly recovery: RecoveryParams;
  readonly scenarios: readonly Scenario[];
  readonly timelines: readonly Timeline[];
  /** Observed evidence older than this is reported stale. */
  readonly staleAfterMs: number;
  /**
   * Protected-RAM capability evidence (battery, hold-up) older than this no longer makes RAM
   * survive power loss, however fresh the receipt. Default: `staleAfterMs`.
   */
  readonly protectedEvidenceMaxAgeMs?: number;
  /**
   * Drain layout of protected-RAM holders: their receipted protected bytes are judged together by
   * the same bound holders and `custody admit` use (shared targets and links split between
   * simultaneous drains). A holder over the bound has its protected claims counted as plain RAM.
   */
  readonly protectedRam?: ProtectedRamLayout;
  /** Holders that shed custody once the policy allows (RAM tiers); others keep theirs. */
  readonly releasable: readonly string[];
  /**
   * Holders that persist (disk residency). Their copies are released only where another disk copy
   * or a base has them, from the first evaluation on: before its first flush a store claims only
   * RAM, and releasing that copy because RAM holders had it left the store a hole below every
   * base it could build (30-minute soak: 1-24 gone at the store, no base ever, RAM pinned for good).
   * Holders seen persisting are added at run time either way.
   */
  readonly durable?: readonly string[];
  /**
   * The volume's coalesced stream (issue #22): derived lane → the raw lane it images. Receipts of a
   * derived lane (representation `coalesced`) count only as coalesced images of that raw lane, never
   * as its raw records; a derived lane not named here counts for nothing.
   */
  readonly coalesced?: Readonly<Record<string, string>>;
  /** The contract's retention window: named holders keep each sequence this long after its commit. */
  readonly retention?: RetentionWindow;
  /**
   * Where the control plane runs (control-log replicas, the volume's controllers): each scenario says whether it
   * survives.
   */
  readonly controlPlane?: ControlPlanePlacement;
}

export interface ControllerConfig {
  readonly controllerId: string;
  readonly region: string;
  readonly topology: VolumeTopology;
  /** Lower bound between two policy evaluations (bounded frequency, off the I/O path). Default 100 ms. */
  readonly evalIntervalMs?: number;
  /**
   * A holder's releases are committed at most once per this interval (ms). Every release is a
   * control-log event; fewer, larger releases keep the log, and every reader's work, small.
   * Default 1000.
   */
  readonly releaseEveryMs?: number;
  /**
   * Automatic repair of committed declare-failure events. Without it the controller only reports
   * "repair needed" in its status document.
   */
  readonly repair?: RepairConfig;
  /**
   * Admission policy for holders' new incarnations (signed requests on `custody.v1.admit.<holder>`).
   * `key-continuity`: admit a restart signed by the key the log already admitted for that holder,
   * from the same failure domain, for a higher incarnation. Default `operator`: only
   * `custody holder admit` (or another operator commit) admits.
   */
  readonly admission?: "key-continuity" | "operator";
  /**
   * Coverage repair: a gap (acknowledged sequences a required scenario would lose while some holder
   * has them) older than `graceMs` is copied to a holder that survives the scenario; a target is
   * tried again every `retryMs` until covered; gaps are looked for every `checkMs` too, between
   * evaluation rounds. Defaults 1000/2000/500. With `optional`, gaps of scenarios the contract
   * does not require are closed too — optional work, which a `spend` ceiling may refuse.
   */
  readonly coverageRepair?: {
    readonly graceMs?: number;
    readonly retryMs?: number;
    readonly checkMs?: number;
    readonly optional?: boolean;
  };
  /**
   * Monthly spend ceiling, priced region edges and the steady / catch-up / repair / long-outage
   * budget plan (see policies/spend-budget.ts). Work for required scenarios always runs; optional
   * work past the ceiling or its budget is refused, counted and listed in the status document.
   */
  readonly spend?: SpendConfigInput;
  /**
   * Measured routes (`custody.v1.route.*`): measurements younger than `maxAgeMs` replace the
   * configured bandwidth of the links they cover, their steady load is shared with repair, and the
   * repair estimate uses them. Absent: links and the repair estimate stay as configured.
   */
  readonly routes?: RoutesConfig;
  /**
   * How the status document's verdicts read over time (policies/steady-verdict.ts): a write a
   * scenario would lose is in flight, not lost, for `receiptDeadlineMs` after its commit, and lost
   * writes beyond the allowance turn a verdict to not met only after `graceMs` without a break.
   * Defaults 2000 / 2000.
   */
  readonly verdict?: { readonly receiptDeadlineMs?: number; readonly graceMs?: number };
  /** Retention audits of the holders (off when absent; see retention-audits.ts). */
  readonly retentionAudit?: RetentionAuditConfig;
  /**
   * Persistence targets (see persistence-choice.ts): the controller names, per lane, which of
   * `candidates` (holders that can persist) flush it, enough for every required scenario that no
   * RAM copy survives to keep `copies` (default 1) persisted copies; the others keep it in RAM.
   * Absent: every disk-capable holder flushes as its own flush policy says.
   */
  readonly persistenceTargets?: { readonly candidates: readonly string[]; readonly copies?: number };
}

/**
 * Retention audits' rate and cost bound. Every `everyMs` each holder claiming raw units gets one
 * challenge of `unitsPerChallenge` sampled sequences (each pulls in its whole unit), answered
 * within `answerTimeoutMs` or counted late. A challenge starts only while the reference bytes
 * read in the current `periodMs` are below `maxBytesPerPeriod`.
 */
export interface RetentionAuditConfig {
  readonly everyMs: number;
  readonly unitsPerChallenge: number;
  readonly answerTimeoutMs: number;
  readonly maxBytesPerPeriod: number;
  readonly periodMs: number;
}

/** A holder kept in reserve to replace a failed one (started on demand by the repair launcher). */
export interface StandbyHolder {
  readonly holderId: string;
  readonly site: string;
  /**
   * The raw Ed25519 public key (64 hex digits) the deployment issued to this standby. The
   * production launcher (AnnouncedStandbys) takes a standby only when its admission request is
   * signed by this key; launchers that start the holder themselves do not need it.
   */
  readonly publicKey?: string;
}

/** How the controller repairs a declared failure. */
export interface RepairConfig {
  /** Replacement candidates in preference order: the first one never admitted to the control log is picked. */
  readonly standby: readonly StandbyHolder[];
  /** Bandwidth the repair estimate assumes (bytes/s). */
  readonly bandwidthBytesPerSec: number;
  readonly receiptTimeoutMs?: number;
  /** Longest a repair's read stays held in the control log if its controller dies mid-repair (ms). Default 600000. */
  readonly readLeaseMs?: number;
  /**
   * Where repairs run: `in-process` (default) as child actors of the controller, or `remote`:
   * handed to a repair worker of the volume (`custody run repair`) over NATS, the controller
   * answering its requests (see docs/custody.md).
   */
  readonly worker?: "in-process" | "remote";
  /** How long a remote worker may take before the repair counts as failed (ms). Default 600000. */
  readonly workerTimeoutMs?: number;
}

/**
 * Holders the controller releases for: the topology's `releasable` list and every standby. A
 * standby in service (a failure's replacement, or one coverage repair enlisted) receives copies
 * for as long as it serves; without releasing them once the policy allows, it would grow forever.
 */
export function releasableHolders(config: Pick<ControllerConfig, "topology" | "repair">): string[] {
  const listed = config.topology.releasable;
  return [...listed, ...(config.repair?.standby ?? []).map((s) => s.holderId).filter((id) => !listed.includes(id))];
}
