import { maxOutstanding, type CreditGeometry } from "./credit-math.ts";
import { Residency } from "../core/index.ts";
import { PIN_REASONS, type PinReason } from "./pin-reason.ts";
import { SegmentState, type Segment } from "./segment.ts";

/** Point-in-time accounting of one arena (what the LaneArena actor exposes as its snapshot). */
export interface ArenaReport {
  readonly segmentBytes: number;
  readonly capacityBytes: number;
  readonly hardLimitBytes: number;
  /** RAM held by segments (whole segments), and the unit bytes stored in them. */
  readonly ramBytes: number;
  readonly ramStoredBytes: number;
  /** Stored bytes of segments whose custody continues on disk. */
  readonly diskBytes: number;
  readonly freeBytes: number;
  readonly segments: { readonly open: number; readonly sealed: number; readonly spilled: number };
  readonly pins: Record<PinReason, number>;
  readonly outstandingCredits: number;
  readonly creditsByLane: Record<string, number>;
  /** Bytes that could still be granted to a new lane now. */
  readonly grantableBytes: number;
  readonly wantsIncrement: boolean;
}

/** The arena's slot accounting a report needs (in segments), besides its segments and lanes. */
export interface ArenaSlots {
  readonly geometry: CreditGeometry;
  readonly capacityBytes: number;
  readonly hardLimitBytes: number;
  readonly ramSlots: number;
  readonly freeSlots: number;
  readonly spareSlots: number;
  readonly wantsIncrement: boolean;
}

/** Bytes by residency, pins by reason, outstanding credits per lane key, grantable space. Pure. */
export function arenaReport(
  segments: Iterable<Segment>,
  lanes: Iterable<[string, { readonly outstanding: number }]>,
  slots: ArenaSlots,
): ArenaReport {
  const pins = Object.fromEntries(PIN_REASONS.map((r) => [r, 0])) as Record<PinReason, number>;
  let ramStored = 0;
  let disk = 0;
  let open = 0;
  let sealed = 0;
  let spilled = 0;
  for (const seg of segments) {
    PIN_REASONS.forEach((r, i) => (pins[r] += seg.pins[i]!));
    if (seg.residency === Residency.ram) ramStored += seg.fill;
    else {
      disk += seg.fill;
      spilled++;
    }
    if (seg.state === SegmentState.open) open++;
    else sealed++;
  }
  const creditsByLane: Record<string, number> = {};
  let outstanding = 0;
  for (const [k, l] of lanes) {
    if (l.outstanding > 0) creditsByLane[k] = l.outstanding;
    outstanding += l.outstanding;
  }
  const S = slots.geometry.segmentBytes;
  return {
    segmentBytes: S,
    capacityBytes: slots.capacityBytes,
    hardLimitBytes: slots.hardLimitBytes,
    ramBytes: slots.ramSlots * S,
    ramStoredBytes: ramStored,
    diskBytes: disk,
    freeBytes: slots.freeSlots * S,
    segments: { open, sealed, spilled },
    pins,
    outstandingCredits: outstanding,
    creditsByLane,
    grantableBytes: Math.max(0, maxOutstanding(slots.geometry, slots.spareSlots, 0)),
    wantsIncrement: slots.wantsIncrement,
  };
}
