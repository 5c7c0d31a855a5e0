import { RangeSet } from "../../lanes/index.ts";
import type { WriteRecord } from "../../transport/protocol/index.ts";
import { openEdgeLedger, type EdgeLedger, type SendRecord } from "../hop/index.ts";
import { emptyList, listFirst, type ChunkedList } from "./chunked-list.ts";
import { checkCoalescedStream, derivedLaneSpecs } from "./coalesced-stream.ts";
import { checkWriterConfig, type LaneSpec, type VolumeWriterConfig } from "./writer-config.ts";
import type { WriterCut } from "./writer-ports.ts";

/**
 * The volume writer's state as plain data (the machine context holds it; the pure step changes
 * it). RangeSet values are immutable values (never changed after construction), like numbers.
 */

/** One unit the writer still retains: its complete `unit` encoding and its credited bytes. */
export interface RetainedUnit {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly data: Uint8Array;
  readonly bytes: number;
}

/** A commit run not yet published as progress: [first, last, committedAt, bytes]. */
export type CommitRun = readonly [number, number, number, number];

/** One lane (raw, or derived by the coalesced stream): what it wrote, retains, and what receipts prove. */
export interface WriterLaneState {
  readonly spec: LaneSpec;
  /** A coalesced stream's lane: takes no writes, its units come from the coalescing consumer. */
  readonly derived: boolean;
  /** Next sequence to assign. */
  readonly next: number;
  /** Records of the open unit (cut at the group commit, or when `maxUnitPayloadBytes` is reached). */
  readonly pending: readonly WriteRecord[];
  readonly pendingTs: readonly number[];
  readonly pendingBytes: number;
  /** Commit runs not yet published as progress. */
  readonly runs: readonly CommitRun[];
  /** Sequences per holder proven by verified receipts (monotone). */
  readonly proven: Readonly<Record<string, RangeSet>>;
  /** Highest sequence the controller confirmed for every required scenario, on fresh evidence. */
  readonly confirmed: number;
  /** What each first hop's current incarnation receipted, or the control log released there. */
  readonly ledger: EdgeLedger;
  /** Sequences admitted and not yet dropped (the lane's custody obligations). */
  readonly retained: RangeSet;
  /** Sequences dropped; never admitted again. */
  readonly released: RangeSet;
  /** Retained units in sequence order, and their encoded bytes. */
  readonly units: ChunkedList<RetainedUnit>;
  readonly unitBytes: number;
  /** Per first hop: when each range was last sent (gap repair). */
  readonly sendLogs: Readonly<Record<string, SendRecord>>;
  /** Per first hop: the re-send wait multiple (doubles while re-sends bring no receipt). */
  readonly backoff: Readonly<Record<string, number>>;
}

/** A protected sync waiting for receipts (its reply is kept by id outside the state). */
export interface ProtectionWaiter {
  readonly id: number;
  readonly contract: string;
  readonly target: Readonly<Record<string, number>>;
  readonly durableLsn: number;
}

/** A write waiting for custody backlog to fall under the bound (backpressure). */
export interface WaitingWrite {
  readonly id: number;
  readonly lba: number;
  readonly data: Uint8Array;
}

/** A sealed unit waiting for the outbox flush that makes it durable before it is sent. */
export interface OutboxQueued {
  readonly lane: string;
  readonly unit: RetainedUnit;
}

export interface WriterState {
  readonly config: VolumeWriterConfig;
  readonly lanes: Readonly<Record<string, WriterLaneState>>;
  /** Raw lanes by first LBA, and their specs (writes split over them). */
  readonly order: readonly string[];
  readonly specs: readonly LaneSpec[];
  /** Raw and derived lanes. */
  readonly all: readonly string[];
  /** Highest writer term seen in holders' receipts (above ours once a newer writer took over). */
  readonly newestTerm: number;
  /** The newer term that fenced this writer, once one did. */
  readonly fencedBy: number | undefined;
  readonly stopped: boolean;
  /** Consistency manifests of recent multi-lane cuts, oldest first. */
  readonly cuts: ChunkedList<WriterCut>;
  /** The newest manifest shipped, and when. */
  readonly manifestShipped: { readonly lsn: number; readonly at: number };
  /** A group-commit cut is scheduled. */
  readonly cutQueued: boolean;
  /** SmartWAL writes sent and not yet completed (custody on): with none left, a batch is cut at once. */
  readonly walInFlight: number;
  readonly waiters: readonly ProtectionWaiter[];
  readonly waiting: readonly WaitingWrite[];
  /** Units waiting for the outbox flush, and whether one runs (one at a time). */
  readonly outboxQueue: readonly OutboxQueued[];
  readonly outboxFlushing: boolean;
  readonly hasOutbox: boolean;
}

/** A fresh lane: nothing written, every first hop unheard. */
export function initialLaneState(spec: LaneSpec, config: VolumeWriterConfig, derived: boolean): WriterLaneState {
  return {
    spec,
    derived,
    next: spec.firstSeq ?? 1,
    pending: [],
    pendingTs: [],
    pendingBytes: 0,
    runs: [],
    proven: {},
    // No controller status confirms a derived lane: its units are kept only until receipted.
    confirmed: derived ? Number.MAX_SAFE_INTEGER : 0,
    ledger: openEdgeLedger(spec.holders, config.topologyEpoch),
    retained: RangeSet.EMPTY,
    released: RangeSet.EMPTY,
    units: emptyList(),
    unitBytes: 0,
    sendLogs: {},
    backoff: {},
  };
}

/** The state of a writer just started. Throws WriterConfigError for a bad configuration. */
export function initialWriterState(config: VolumeWriterConfig, opts: { hasOutbox: boolean }): WriterState {
  checkWriterConfig(config);
  checkCoalescedStream(config);
  const raw = [...config.lanes].sort((a, b) => a.fromLba - b.fromLba);
  const derived = derivedLaneSpecs(config);
  const lanes: Record<string, WriterLaneState> = {};
  for (const spec of raw) lanes[spec.lane] = initialLaneState(spec, config, false);
  for (const spec of derived) lanes[spec.lane] = initialLaneState(spec, config, true);
  return {
    config,
    lanes,
    order: raw.map((l) => l.lane),
    specs: raw,
    all: [...config.lanes.map((l) => l.lane), ...derived.map((l) => l.lane)],
    newestTerm: 0,
    fencedBy: undefined,
    stopped: false,
    cuts: emptyList(),
    manifestShipped: { lsn: -1, at: -Infinity },
    cutQueued: false,
    walInFlight: 0,
    waiters: [],
    waiting: [],
    outboxQueue: [],
    outboxFlushing: false,
    hasOutbox: opts.hasOutbox,
  };
}

/** How often unreceipted units are checked for a resend. */
export const resendEveryMs = (s: WriterState): number => Math.max(10, Math.floor(resendAfterMs(s) / 2));
/** A unit a first hop has not receipted this long after its last send goes again. */
export const resendAfterMs = (s: WriterState): number => s.config.resendAfterMs ?? 1000;
/** How often progress is published (0: never). */
export const progressEveryMs = (s: WriterState): number => s.config.progressIntervalMs ?? 50;
/** The custody backlog bound (bytes). */
export const maxBacklogBytes = (s: WriterState): number => s.config.maxCustodyBacklogBytes ?? 64 * 1024 * 1024;

/** Bytes of custody not yet taken by every first hop: retained units plus records not yet cut (raw lanes). */
export function custodyBacklogBytes(s: WriterState): number {
  let n = 0;
  for (const name of s.order) n += s.lanes[name]!.unitBytes + s.lanes[name]!.pendingBytes;
  return n;
}

/** Lane heads now (the highest sequence assigned on each raw lane). */
export function laneHeads(s: WriterState): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of s.order) out[name] = s.lanes[name]!.next - 1;
  return out;
}

/** Whether lane `l` still retains the unit starting at `firstSeq` (only a prefix is ever dropped). */
export function stillRetains(l: WriterLaneState, firstSeq: number): boolean {
  const first = listFirst(l.units);
  return first !== undefined && first.firstSeq <= firstSeq;
}
