import type { Arena } from "../../arena/index.ts";
import type { ArenaConfig } from "../../arena/index.ts";
import type { PinReason } from "../../arena/index.ts";
import type { SpillEvidence } from "../../arena/index.ts";
import type { Clock, Counters } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import type { LaneLog, UnitVerdict } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";

/** How a LaneArena actor is built. Pass an `arena`, or a `config` (and `clock`, `counters`) to make one. */
export interface LaneArenaInput {
  arena?: Arena;
  config?: Partial<ArenaConfig>;
  /** Also pass the same clock to `createActor(machine, { clock })` so seal delays use it. */
  clock?: Clock;
  /** Where a made arena counts its refusals (default: its own). */
  counters?: Counters;
  /** Lanes whose acceptance logs exist from the start (others appear with their first unit). */
  lanes?: readonly { readonly volume: string; readonly lane: string }[];
  /**
   * Keep `report` and `lanes` in the snapshot current after every event (default true). A holder
   * passes false: its hot path reads `context.arena` and `context.logs` instead, so one admission
   * does not pay for a whole-arena report.
   */
  summaries?: boolean;
  /**
   * Seal an open segment once its max open delay passes (default true). A holder passes false: its
   * seal timer also decides whether a quiet lane's segment is worth sealing yet (holder-core `sealDue`).
   */
  sealTimers?: boolean;
  /** Where sealed segments spill. Without it the holder is RAM-only and spill requests are refused. */
  spill?: { files: FileLayer; path: string };
  /** Flush completion deadline for spills (default 200 ms). */
  flushDeadlineMs?: number;
  /** Secures more memory (resolves true when `bytes` are really available). Without it, no growth. */
  acquireIncrement?: (bytes: number) => Promise<boolean>;
}

/** Acceptance state of one lane, as the snapshot shows it. */
export interface LaneSummary {
  readonly term: number;
  readonly retained: [number, number][];
  readonly contiguousThrough: number;
  readonly holes: [number, number][];
}

/** What the actor's owner may do with its arena directly: read it. Every change is an event. */
export type LaneArenaView = Pick<
  Arena,
  | "config"
  | "counters"
  | "capacityBytes"
  | "ramBytes"
  | "report"
  | "describe"
  | "segmentsOf"
  | "openSegmentOf"
  | "units"
  | "exportSegment"
  | "outstanding"
  | "holds"
  | "spillCandidates"
  | "wantsIncrement"
>;

/** What the actor's owner may do with a lane's acceptance log directly: read it. */
export type LaneLogView = Pick<
  LaneLog,
  | "volume"
  | "lane"
  | "base"
  | "term"
  | "retained"
  | "released"
  | "received"
  | "contiguousThrough"
  | "holes"
  | "classify"
>;

/** Events the LaneArena actor accepts. */
export type LaneArenaEvent =
  /**
   * Validate, classify and store a unit (with its writer `attestation`, if any); `forwardPins` in_flight_forward pins
   * go on a segment it opens.
   */
  | { type: "admit"; unit: TransportUnit; forwardPins?: number; attestation?: string }
  /**
   * `admit` for each of a frame's units in order, as one event: answered by one `admittedMany` listing each unit's
   * `admitted` or `rejected`, in that order.
   */
  | {
      type: "admitMany";
      units: readonly { readonly unit: TransportUnit; readonly attestation?: string }[];
      forwardPins?: number;
    }
  | { type: "seal"; volume: string; lane: string }
  | { type: "sealDue"; segmentId: number; volume: string; lane: string }
  | { type: "pin"; segmentId: number; reason: PinReason }
  | { type: "unpin"; segmentId: number; reason: PinReason }
  /**
   * `secure`: first secure the next capacity increment when free space runs low (the memory is at hand up to the hard
   * limit).
   */
  | { type: "grant"; volume: string; lane: string; bytes: number; secure?: boolean }
  | { type: "revoke"; volume: string; lane: string }
  | { type: "release"; volume: string; lane: string; ranges: [number, number][] }
  | { type: "spill"; segmentIds?: number[] }
  | { type: "pressure"; targetRamBytes?: number }
  /** Persistence evidence for a segment the owner wrote to its spill stream: residency moves to disk. */
  | { type: "recordSpill"; segmentId: number; evidence: SpillEvidence }
  | { type: "export"; segmentId: number }
  /** Another holder's segment, or (with `evidence`) one found on disk at start, held at disk residency. */
  | { type: "import"; bytes: Uint8Array; evidence?: SpillEvidence }
  | { type: "grow" };

/** Events the actor emits (`actor.on(type, fn)`): results of requests, refusals, and custody moves. */
export type LaneArenaEmitted =
  | {
      type: "admitted";
      volume: string;
      lane: string;
      firstSeq: number;
      lastSeq: number;
      verdict: UnitVerdict;
      segmentId: number | undefined;
      /** True when this unit opened a new segment. */
      opened: boolean;
      /** Lane progress, with summaries on. */
      contiguousThrough?: number;
      holes?: [number, number][];
    }
  /** `stage`: "check" refusals (validation, lane log) are counted by the actor, "arena" ones by the arena. */
  | { type: "rejected"; request: LaneArenaEvent["type"]; code: string; message: string; stage: "check" | "arena" }
  /** The verdicts of an `admitMany`, one per unit in order. */
  | { type: "admittedMany"; verdicts: UnitVerdictEmitted[] }
  | { type: "granted"; volume: string; lane: string; requested: number; granted: number }
  | { type: "revoked"; volume: string; lane: string; bytes: number }
  | { type: "sealed"; segmentId: number; full: boolean }
  | { type: "sealDeferred"; segmentId: number }
  | { type: "released"; volume: string; lane: string; segmentIds: number[] }
  | { type: "recycled"; segmentId: number }
  | { type: "spilled"; segmentIds: number[] }
  | { type: "flushDeadlineMissed"; segmentIds: number[]; deadlineMs: number }
  | { type: "spillFailed"; message: string }
  | { type: "exported"; segmentId: number; bytes: Uint8Array }
  | { type: "imported"; segmentId: number; volume: string; lane: string; seqs: [number, number][] }
  | { type: "grown"; capacityBytes: number }
  | { type: "growthRefused"; capacityBytes: number };

/** One unit's verdict: stored (or a duplicate), or refused. */
export type UnitVerdictEmitted = Extract<LaneArenaEmitted, { type: "admitted" | "rejected" }>;
