import type { RangeSet } from "../lanes/index.ts";
import type { ControlFenceCode } from "./control-error.ts";
import { GENESIS_HASH, type ControlEvent } from "./control-event.ts";
import type { Holds } from "./control-holds.ts";
import type { Failovers } from "./control-failover.ts";
import type { PersistenceChoices } from "./control-persistence.ts";
import type { PayloadRepresentation } from "./source-cut.ts";

/*
 * The records the control state and the control log are made of: the folded state, its holders,
 * obligations, transfers and leases, log entries, snapshots and their signatures. Types only (and
 * the empty state), kept apart from the fold (control-state.ts), the lease rules (control-lease.ts),
 * scope and trust checks (control-scope.ts, control-trust.ts) and snapshots (control-snapshot.ts),
 * which all read them, so none of those files needs another just for a type.
 */

/** Lifecycle of an admitted holder. Only `active` holders take or back custody. */
export const HolderStatus = { active: "active", retired: "retired", failed: "failed" } as const;
export type HolderStatus = (typeof HolderStatus)[keyof typeof HolderStatus];

/** An admitted holder incarnation and the key that signs its receipts. */
export interface HolderRecord {
  readonly holderId: string;
  readonly incarnation: number;
  readonly publicKey: Uint8Array;
  readonly failureDomain: string;
  readonly status: HolderStatus;
  /** Volumes admissions bound it to (control-scope.ts); absent: admitted unscoped, bound to every volume. */
  readonly volumes?: readonly string[];
}

/** A retention obligation: who is responsible for which ranges, and what each holder has released. */
export interface ObligationRecord {
  readonly obligationId: string;
  readonly volume: string;
  readonly lane: string;
  readonly representation: PayloadRepresentation;
  readonly responsible: Readonly<Record<string, RangeSet>>;
  /** Release frontiers: ranges each holder is authorized to forget. Only ever grows. */
  readonly released: Readonly<Record<string, RangeSet>>;
}

/** A custody transfer: prepared first, activated once the controller has the successor's evidence. */
export interface TransferRecord {
  readonly transferId: string;
  readonly obligationId: string;
  readonly fromHolder: string;
  readonly toHolder: string;
  readonly ranges: RangeSet;
  readonly preparedEpoch: number;
  readonly preparedGeneration: number;
  readonly status: "prepared" | "active";
}

/** Folded control log. Immutable: every transition returns a new object. */
export interface ControlState {
  /** Log sequence of the last folded entry (0 before the first). */
  readonly lastSeq: number;
  /** Hash of the last folded event (`GENESIS_HASH` before the first). */
  readonly headHash: string;
  readonly topologyEpoch: number;
  readonly policyGeneration: number;
  readonly holders: Readonly<Record<string, HolderRecord>>;
  readonly obligations: Readonly<Record<string, ObligationRecord>>;
  readonly transfers: Readonly<Record<string, TransferRecord>>;
  /** Ranges held in the network by PITR pins and registered recoveries (see control-holds.ts). */
  readonly holds: Holds;
  /** The newest failover per lane (see control-failover.ts); absent before the first. */
  readonly failovers?: Failovers;
  /** The controller's persistence targets per lane (see control-persistence.ts); absent before the first. */
  readonly persistence?: PersistenceChoices;
  /**
   * Control leases per volume (see control-lease.ts); absent before the first claim, and a volume without one is
   * unleased.
   */
  readonly leases?: ControlLeases;
  /** Committed events the fold refused (each changed nothing), in log order. */
  readonly rejected: readonly { readonly seq: number; readonly code: ControlFenceCode; readonly message: string }[];
  /**
   * Controllers an operator admitted (`admit_controller`): their raw Ed25519 public keys and the
   * volumes they may commit for (absent: every volume, a v1 admission). Absent until the first.
   */
  readonly controllers?: Readonly<
    Record<string, { readonly publicKey: Uint8Array; readonly volumes?: readonly string[] }>
  >;
  /**
   * Hash of the entry at `lastSeq` when the fold skipped it (an unsigned or wrongly signed entry
   * of a signed log): the chain (`headHash`) runs over accepted events only, while a reader that
   * re-reads from `lastSeq` must find this entry unchanged there.
   */
  readonly lastEntryHash?: string;
}

/** The state of an empty log: epoch 1, generation 1, nothing admitted. */
export const INITIAL_CONTROL_STATE: ControlState = {
  lastSeq: 0,
  headHash: GENESIS_HASH,
  topologyEpoch: 1,
  policyGeneration: 1,
  holders: {},
  obligations: {},
  transfers: {},
  holds: {},
  rejected: [],
};

/** One committed log entry: its log sequence, decoded event and the hash of its canonical bytes. */
export interface ControlLogEntry {
  readonly seq: number;
  readonly event: ControlEvent;
  readonly hash: string;
  /** Who signed the entry's hash, and the Ed25519 signature (absent in an unsigned log). */
  readonly signature?: EntrySignature;
}

/**
 * A stored entry whose bytes do not decode as a control event (junk committed by a principal with
 * append rights). A reader with a trust root skips it like an unsigned entry, counted as
 * `unreadable_entry` in `rejected`; a reader without one stops at it (`unreadable_entry` thrown).
 */
export interface UnreadableControlEntry {
  readonly seq: number;
  /** Hex SHA-256 of the stored bytes, so the chain position is still pinned. */
  readonly hash: string;
  /** Why it did not decode. */
  readonly unreadable: string;
  readonly event?: undefined;
  readonly signature?: EntrySignature;
}

/** What a store holds at one position: a decoded entry, a snapshot (control-snapshot.ts), or an unreadable one. */
export type ControlLogRecord = ControlLogEntry | UnreadableControlEntry | ControlSnapshotRecord;

/** True for an entry that decoded. */
export function isReadableEntry(e: ControlLogRecord): e is ControlLogEntry {
  return e.event !== undefined;
}

/** The signature an entry carries beside its event bytes. */
export interface EntrySignature {
  readonly signer: string;
  readonly signature: Uint8Array;
}

/** The lease of one volume (control-lease.ts says how leases are claimed, renewed and fenced). */
export interface ControlLease {
  readonly holder: string;
  readonly term: number;
  /** The holder commits at least this often (ms) while alive. */
  readonly renewMs: number;
  /** A standby may claim the next term after seeing no heartbeat for this long (ms, its own clock). */
  readonly timeoutMs: number;
  /** Log sequence of the claim. */
  readonly sinceSeq: number;
  /** Log sequence of the holder's newest accepted entry (its claim, a renewal or any other commit). */
  readonly heartbeatSeq: number;
}

/** Leases by volume, and every controller that ever claimed one (fenced as a controller from then on). */
export interface ControlLeases {
  readonly volumes: Readonly<Record<string, ControlLease>>;
  readonly claimants: readonly string[];
}

/** A decoded snapshot body. */
export interface ControlSnapshot {
  readonly version: number;
  readonly region: string;
  /** The sequence of the last entry the state folded (the snapshot sits at `throughSeq + 1`). */
  readonly throughSeq: number;
  /** The chain head at `throughSeq`: the `prevHash` the first event after the snapshot names. */
  readonly headHash: string;
  /** Hex SHA-256 of `state`. */
  readonly stateHash: string;
  /** `encodeControlState` of the folded state at `throughSeq`. */
  readonly state: Uint8Array;
}

/** A snapshot as a store holds it: its position, its body's hash (what is signed), and its signature. */
export interface ControlSnapshotRecord {
  readonly seq: number;
  /** Hex SHA-256 of the canonical body bytes; the signature covers it and `seq`. */
  readonly hash: string;
  readonly snapshot: ControlSnapshot;
  readonly signature?: EntrySignature;
  readonly event?: undefined;
  readonly unreadable?: undefined;
}

/** True for a snapshot record. */
export function isSnapshotRecord(r: { readonly seq: number }): r is ControlSnapshotRecord {
  return (r as { readonly snapshot?: unknown }).snapshot !== undefined;
}
