import type { RangeSet } from "../lanes/index.ts";
import type { Site } from "./topology.ts";
import type { Scenario, Timeline } from "./scenario.ts";
import { Residency } from "../core/index.ts";
import type { AuditState } from "./audit-book.ts";

/** Where a retained range lives on a holder (one home: core/residency.ts). */
export { Residency };

/** How a claim is known: by a receipt (`observed`) or by an admitted RPO bound not yet receipted. */
export const EvidenceKind = { observed: "observed", admittedBound: "admitted_bound" } as const;
export type EvidenceKind = (typeof EvidenceKind)[keyof typeof EvidenceKind];

/** The label a report carries: observed evidence turns `stale` once older than `staleAfterMs`. */
export const EvidenceLabel = { observed: "observed", stale: "stale", admittedBound: "admitted_bound" } as const;
export type EvidenceLabel = (typeof EvidenceLabel)[keyof typeof EvidenceLabel];

/** One holder's retained ranges of one lane in one residency, with the evidence for them. */
export interface RetainedClaim {
  readonly lane: string;
  readonly ranges: RangeSet;
  readonly residency: Residency;
  readonly evidence: { readonly kind: EvidenceKind; readonly atMs: number };
  /** For `protected_ram`: hold-up evidence (capacity, battery, autonomous path) is currently valid. */
  readonly protectedRamValid?: boolean | undefined;
  /** The holder must keep these ranges until this time (retention window). */
  readonly retainUntilMs?: number | undefined;
}

/** A custody holder (the writer's own WAL is a holder too) at a site. */
export interface Holder {
  readonly id: string;
  readonly site: string;
  readonly claims: readonly RetainedClaim[];
  /**
   * Coalesced images the holder keeps (issue #22), each claimed under the raw lane it images, its
   * ranges ending at a window end (the image's source cut). Never possession of the raw records:
   * only `evaluateState` weighs them, as a scenario's alternative cut (see coalesced-cut.ts).
   */
  readonly coalesced?: readonly RetainedClaim[] | undefined;
  /**
   * The holder's retention-audit state, when audits run (policies/audit-book.ts): a `failed` holder
   * is unproven and its claims count for nothing (evaluateState drops them); absent means not audited.
   */
  readonly audit?: AuditState;
}

/** A base snapshot: a consistent cut (lane → last sequence included) stored on a holder's disk. */
export interface BaseSnapshot {
  readonly id: string;
  readonly holder: string;
  readonly cut: Readonly<Record<string, number>>;
  readonly bytes: number;
}

/** A consistency manifest naming a cut across lanes, stored with the listed holders. */
export interface ConsistencyManifest {
  readonly id: string;
  readonly cut: Readonly<Record<string, number>>;
  readonly holders: readonly string[];
  /**
   * Where the holders keep it: on `disk` (the default) it lasts as long as their disks; in `ram`
   * (beside the retained range it covers) only while their processes and that range survive.
   */
  readonly residency?: "ram" | "disk" | undefined;
}

/** A key authority able to authorize decryption of the volume. Lost with its site or `key_authority:<id>`. */
export interface KeyAuthority {
  readonly id: string;
  readonly site: string;
}

/** The metadata quorum needed for a writable activation: `quorum` of the `members` sites. */
export interface MetadataQuorum {
  readonly members: readonly string[];
  readonly quorum: number;
}

/** A usable network path between two sites (both directions) with its available bandwidth. */
export interface Link {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly bandwidthBytesPerSec: number;
  /** Dependency tags of the path itself (e.g. `link:transatlantic-1`). */
  readonly deps: readonly string[];
  /** Present when `bandwidthBytesPerSec` was measured (route probes): the measurement's age (ms). */
  readonly measuredAgeMs?: number | undefined;
}

/** A group-committed run of sequences: all committed at `committedAtMs`, `bytesPerSeq` each. */
export interface CommitRun {
  readonly lane: string;
  readonly first: number;
  readonly last: number;
  readonly committedAtMs: number;
  readonly bytesPerSeq: number;
}

/** The fixed phases of recovery at a destination (seconds); transfer time is computed. */
export interface RecoveryParams {
  readonly destination: string;
  readonly detectSec: number;
  readonly authorizeSec: number;
  readonly acquireCapacitySec: number;
  readonly persistSec: number;
  readonly validateSec: number;
}

/** Forwarding or repair in flight: completes `completesAfterSec` after the snapshot if both ends last. */
export interface PendingForward {
  readonly from: string;
  readonly to: string;
  readonly lane: string;
  readonly ranges: RangeSet;
  readonly residency: Residency;
  readonly completesAfterSec: number;
}

/** A point-in-time-recovery pin: `holder` must keep `ranges` of `lane`. */
export interface PitrPin {
  readonly id: string;
  readonly holder: string;
  readonly lane: string;
  readonly ranges: RangeSet;
}

/** A recovery reading `ranges` of `lane` (from `sources`, or from anyone when omitted). */
export interface RecoveryInFlight {
  readonly id: string;
  readonly lane: string;
  readonly ranges: RangeSet;
  readonly sources?: readonly string[] | undefined;
}

/**
 * A snapshot of one volume's custody, as the controller builds it from the receipt ledger. All
 * times are inputs (`asOfMs`); nothing here reads a clock.
 */
export interface EvaluationState {
  readonly volume: string;
  readonly asOfMs: number;
  /** Observed evidence older than this is labelled stale. */
  readonly staleAfterMs: number;
  /** The writer: its site and the highest acknowledged sequence per lane. */
  readonly source: { readonly site: string; readonly lanes: Readonly<Record<string, number>> };
  readonly commits: readonly CommitRun[];
  readonly sites: readonly Site[];
  readonly holders: readonly Holder[];
  readonly bases: readonly BaseSnapshot[];
  readonly manifests: readonly ConsistencyManifest[];
  /**
   * Consistency manifests of the coalesced stream (in raw lane names): cuts at which every lane's
   * image ends a window together. Only the images-only evaluation uses them (coalesced-cut.ts); a
   * raw manifest may fall inside a window, where no image can rebuild the volume.
   */
  readonly coalescedManifests?: readonly ConsistencyManifest[] | undefined;
  readonly keyAuthorities: readonly KeyAuthority[];
  readonly metadataQuorum?: MetadataQuorum | undefined;
  readonly links: readonly Link[];
  readonly recovery: RecoveryParams;
  readonly forwards: readonly PendingForward[];
  readonly pins: readonly PitrPin[];
  readonly recoveries: readonly RecoveryInFlight[];
  readonly scenarios: readonly Scenario[];
  readonly timelines: readonly Timeline[];
  /** Steady write load measured on links, by sending site (repair shares the link with it). */
  readonly linkLoads?: readonly LinkLoad[] | undefined;
  /**
   * Where the control plane runs (control-log replicas, the volume's controllers). Present: each
   * report says what of it survives and a scenario that loses it is not met (control-plane.ts).
   */
  readonly controlPlane?: ControlPlanePlacement | undefined;
}

/** Steady load measured on a link, by the site that sends it (for repair under failure load). */
export interface LinkLoad {
  readonly link: string;
  readonly fromSite: string;
  readonly bytesPerSec: number;
}

/**
 * One member of the control plane (a control-log replica or a controller): where it runs. With a
 * `site` it is reached by every domain of that site; with only a `region` (a deployment places
 * controllers and control servers in regions) by `region:<region>` alone. `domains` adds tokens
 * that reach it too (e.g. `controller:<id>`).
 */
export interface ControlPlaneMember {
  readonly id: string;
  readonly region: string;
  readonly site?: string | undefined;
}

/**
 * Where the control plane of a volume runs (issue #45): the control log's replicas (a quorum of
 * them must survive for anything to be committed or read) and the volume's controllers (one must
 * survive to act). Absent from a state: the control plane is not evaluated (as before).
 */
export interface ControlPlanePlacement {
  /** Wire version of this section of the state file. */
  readonly version: 1;
  /** The control log's name (`controlRegion`), for messages. */
  readonly log: string;
  readonly logReplicas: readonly ControlPlaneMember[];
  readonly controllers: readonly ControlPlaneMember[];
}
