import type { TimerArm } from "../../core/index.ts";
import type { KeyObject } from "node:crypto";
import type { Tracer } from "@opentelemetry/api";
import type { SpillEvidence } from "../../arena/index.ts";
import type { Clock } from "../../core/index.ts";
import type { WriterKeyring } from "../../custody/index.ts";
import type { Counters } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import type { RangeSet } from "../../lanes/index.ts";
import type { PeerDirectory } from "../hop/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import type { ConnectionEvent, InboundMessage, Transport } from "../../transport/index.ts";

/**
 * What a holder is given and what it tells: its ports (transport, clock, key, peers, files,
 * tracer, observer), the events its core hands back to the owning actor, and its observations.
 */

/** Why a holder refused an inbound message (beyond the wire, unit, lane and credit codes it reuses). */
export const HolderRejectCode = {
  UnknownSender: "unknown_sender",
  UnexpectedKind: "unexpected_kind",
} as const;

/** Something a holder did, in order, for tests and operators (spans carry the same facts). */
export type HolderObservation =
  | { type: "admitted"; lane: string; first: number; last: number }
  | { type: "rejected"; lane?: string; code: string }
  | { type: "receipt_published"; lane: string; residency: string; retained: string }
  | { type: "edge_receipt"; lane: string; from: string; retained: string }
  | { type: "neighbor_receipt"; lane: string; from: string; retained: string }
  | { type: "receipt_refused"; lane: string; from: string; code: string }
  | { type: "released"; lane: string; seqs: string }
  | { type: "transfer_offered"; lane: string; to: string; seqs: string }
  | { type: "transfer_admitted"; lane: string; from: string; seqs: string }
  | { type: "transferred_out"; lane: string; to: string; seqs: string }
  | { type: "flush"; outcome: "synced" | "deadline_missed"; seqs: string }
  | { type: "flush_failed"; message: string }
  | { type: "evidence"; status: string }
  | { type: "violation"; lane: string; seqs: string; reason: string };

/** Events the core asks its owning actor to deliver back to it (timers, async completions, NATS). */
/**
 * The holder's timers: each is a delayed event the holder machine raises to itself (`timer.arm`
 * asks for one), so a stopped or retired holder has none left running.
 */
export type HolderTimer =
  | { type: "timer.receipts" }
  | { type: "timer.seal"; lane: string }
  | { type: "timer.flush" }
  | { type: "timer.refresh" }
  | { type: "timer.evacuation" };

export type HolderInbound =
  | { type: "nats.units"; lane: string; msgs: InboundMessage[] }
  | { type: "nats.credit"; lane: string; edge: string; msg: InboundMessage }
  | { type: "nats.receipt"; lane: string; msg: InboundMessage }
  | { type: "nats.release"; msg: InboundMessage }
  | { type: "release.checked"; lane: string; holder: string; ranges: RangeSet }
  | { type: "nats.transfer"; msg: InboundMessage }
  | { type: "nats.fetch"; msg: InboundMessage }
  | { type: "nats.audit"; msg: InboundMessage }
  | { type: "nats.base"; msg: InboundMessage }
  | HolderTimer
  | TimerArm<HolderTimer>
  | { type: "flush.completed"; result: FlushOutcome }
  | { type: "resend.loaded"; lane: string; edge: string; units: readonly LoadedUnit[] }
  | { type: "transport.connection"; event: ConnectionEvent };

/** A unit read back from the spill stream, with the writer attestation its record kept (if any). */
export interface LoadedUnit {
  readonly unit: TransportUnit;
  readonly attestation: string | undefined;
}

/** What a persistence flush achieved: per lane, segment evidence only for an in-deadline sync. */
export type FlushOutcome =
  | { kind: "synced"; spilled: { lane: string; segmentId: number; seqs: RangeSet; evidence: SpillEvidence }[] }
  | { kind: "deadline_missed"; seqs: RangeSet }
  | { kind: "failed"; message: string };

export interface HolderPorts {
  transport: Transport;
  clock: Clock;
  privateKey: KeyObject;
  peers: PeerDirectory;
  /** Needed for disk residency (the spill stream); payload never touches files otherwise. */
  files?: FileLayer;
  spillPath?: string;
  tracer?: Tracer;
  counters?: Counters;
  observe?: (o: HolderObservation) => void;
  /** How often retained coverage is re-announced (repairs lost receipts). Default 500 ms. */
  receiptRefreshMs?: number;
  /**
   * The holder's state directory: its incarnation is claimed there at every start (and the spill
   * stream, if any, may live there too). Production holders always have one; without it the
   * config must name the incarnation (in-process tests).
   */
  stateDir?: { readonly files: FileLayer; readonly dir: string };
  /**
   * Protected RAM the platform preserves across a crash or power loss (NVDIMM, battery-backed DRAM):
   * units admitted while protection holds are mirrored there, and re-admitted at the next start
   * when the evidence says the preservation path completed.
   */
  preserved?: PreservedRam;
  /**
   * The writer keys the key authority named for the holder's volumes: with them every unit must
   * carry a valid writer attestation (`unit_unsigned`, `unit_bad_signature`, … otherwise) before
   * anything is admitted or receipted. Without them (unit tests, the simulator) units are not checked.
   */
  writerKeys?: WriterKeyring;
}

/** A unit as preserved memory holds it: with the writer attestation it was admitted with, if any. */
export type PreservedUnit = TransportUnit & { readonly attestation?: string };

/** The preserved-memory region of a protected-RAM holder (see `HolderPorts.preserved`). */
export interface PreservedRam {
  /** Units found in the region at start (the previous incarnation's protected RAM); empty when none survived. */
  recovered(): Promise<readonly PreservedUnit[]>;
  /** Mirrors an admitted unit, and the writer `attestation` it came with, into the region. */
  keep(unit: TransportUnit, attestation?: string): void;
  /** The holder released or moved `seqs` of a lane out of RAM: the region may drop them. */
  forget(volume: string, lane: string, seqs: RangeSet): void;
}
