import { CustodyError } from "../../core/index.ts";
import type { Site } from "../../policies/index.ts";
import type { CoalescedStreamSpec } from "./coalesced-stream-spec.ts";

/**
 * Configuration of a volume writer: which lanes its log is spread over (by LBA range), the
 * first-hop holders of each lane, the protection contracts a foreground sync may ask for, and the
 * writer term that fences its history.
 */

/** One lane of the volume's log: LBAs `fromLba..toLba` (inclusive) go to this lane. */
export interface LaneSpec {
  readonly lane: string;
  readonly fromLba: number;
  readonly toLba: number;
  /** First-hop holders this lane is sent to (fan-out from the writer, each within its credits). */
  readonly holders: readonly string[];
  /** First sequence of this writer's history on the lane (after failover: recovered cut + 1). */
  readonly firstSeq?: number;
}

/**
 * A protection contract: a write is protected once `copies` holders whose sites survive every
 * loss domain in `losses` (e.g. `az:use1-az1`) have receipted it.
 */
export interface ProtectionContract {
  readonly name: string;
  readonly losses: readonly string[];
  readonly copies?: number;
}

export interface VolumeWriterConfig {
  readonly writerId: string;
  readonly volume: string;
  /** Writer term: units carry it, holders refuse older terms once they saw a newer one. */
  readonly term: number;
  readonly lanes: readonly LaneSpec[];
  readonly contracts: readonly ProtectionContract[];
  /** Site of every holder whose receipts may prove protection. */
  readonly holderSites: Readonly<Record<string, Site>>;
  /** Fence of the receipts the writer accepts. */
  readonly topologyEpoch: number;
  readonly policyGeneration: number;
  /** Largest payload per unit before it is cut (default 64 KiB). */
  readonly maxUnitPayloadBytes?: number;
  /**
   * Custody off (default on): writes go through SmartWAL only — no units, no receipts, no WAN.
   * Lanes then need no holders. Used to measure the same writer with and without custody.
   */
  readonly custody?: boolean;
  /** How often writer progress is published for the controller (default 50 ms; 0 = never). */
  readonly progressIntervalMs?: number;
  /**
   * Bound on custody not yet taken by every first hop (encoded unit bytes retained for re-sending,
   * plus records not yet cut). At the bound, writes wait. Default 64 MiB.
   */
  readonly maxCustodyBacklogBytes?: number;
  /** A unit a first hop has not receipted this long after its last send is sent again (default 1000 ms). */
  readonly resendAfterMs?: number;
  /**
   * How long the writer keeps a unit for re-sending: until every first hop receipted it and the
   * controller's status confirms every required scenario through it (`confirmed`, default), or
   * only until every first hop receipted it (`receipted`: for deployments without a controller).
   */
  readonly retainUntil?: "receipted" | "confirmed";
  /**
   * Optional coalesced stream beside the raw lanes (issue #22): its own holders and cadence
   * (see coalesced-stream.ts; checked by checkCoalescedStream). Absent: nothing changes.
   */
  readonly coalesced?: CoalescedStreamSpec;
}

/** Thrown for an impossible writer configuration (overlapping lanes, unknown holder site, ...). */
export class WriterConfigError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_writer_config", message, detail);
  }
}

/** Thrown for a write after the writer was fenced by a newer term (failover). */
export class WriterFencedError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("writer_fenced", "this writer's term was fenced by a newer writer", detail);
  }
}

/** Thrown for a write outside the volume's lanes or not a whole number of blocks. */
export class WriteRejectedError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("write_rejected", message, detail);
  }
}

/** Thrown when a sync names a contract the writer does not know. */
export class UnknownContractError extends CustodyError {
  constructor(name: string) {
    super("unknown_contract", `no protection contract named ${JSON.stringify(name)}`, { contract: name });
  }
}

/** Thrown when receipts do not prove a contract before the sync's deadline. */
export class ProtectionTimeoutError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("protection_timeout", "receipts did not prove the protection contract in time", detail);
  }
}

/** Checks a writer configuration; throws WriterConfigError naming the first problem. */
export function checkWriterConfig(c: VolumeWriterConfig): void {
  if (!Number.isSafeInteger(c.term) || c.term < 0)
    throw new WriterConfigError("term must be a non-negative integer", { term: c.term });
  if (c.lanes.length === 0) throw new WriterConfigError("a writer needs at least one lane", {});
  const sorted = [...c.lanes].sort((a, b) => a.fromLba - b.fromLba);
  sorted.forEach((l, i) => {
    if (!(Number.isSafeInteger(l.fromLba) && Number.isSafeInteger(l.toLba) && l.fromLba >= 0 && l.toLba >= l.fromLba)) {
      throw new WriterConfigError(`lane ${l.lane} has an impossible LBA range`, { lane: l.lane });
    }
    const prev = sorted[i - 1];
    if (prev !== undefined && prev.toLba >= l.fromLba)
      throw new WriterConfigError(`lanes ${prev.lane} and ${l.lane} overlap`, { lanes: [prev.lane, l.lane] });
    if (l.holders.length === 0 && c.custody !== false)
      throw new WriterConfigError(`lane ${l.lane} has no first-hop holder`, { lane: l.lane });
  });
  if (new Set(c.lanes.map((l) => l.lane)).size !== c.lanes.length)
    throw new WriterConfigError("lane names must be distinct", {});
  for (const ct of c.contracts) {
    if ((ct.copies ?? 1) < 1)
      throw new WriterConfigError(`contract ${ct.name} needs at least one copy`, { contract: ct.name });
  }
}
