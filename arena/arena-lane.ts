import type { RangeSet } from "../lanes/index.ts";
import { segmentsNeeded, type CreditGeometry } from "./credit-math.ts";
import type { Segment } from "./segment.ts";

/** One lane's state inside an arena: its open segment, unused credits, released ranges and live segments. */
export interface ArenaLane {
  readonly volume: string;
  readonly lane: string;
  open: Segment | undefined;
  /** Granted, not yet used, credit bytes. */
  outstanding: number;
  /** Ranges released on this lane; a segment wholly inside them loses its custody pin. */
  released: RangeSet;
  readonly segments: Set<Segment>;
}

/**
 * Fresh segments every lane's outstanding credits may still need (worst case). With `exceptKey`
 * alone that lane is left out; with `remainingOverride` too, it is counted as if its open
 * segment had that much room (0: as if sealed now). Pure.
 */
export function promisedSegments(
  geometry: CreditGeometry,
  lanes: ReadonlyMap<string, ArenaLane>,
  exceptKey?: string,
  remainingOverride?: number,
): number {
  let n = 0;
  for (const [key, l] of lanes) {
    if (l.outstanding === 0) continue;
    let rem = l.open?.remaining ?? 0;
    if (key === exceptKey) {
      if (remainingOverride === undefined) continue; // the caller accounts for this lane itself
      rem = remainingOverride;
    }
    n += segmentsNeeded(geometry, l.outstanding, rem);
  }
  return n;
}
