import { burstThroughput, median, summarizeRtts } from "./route-measurements.ts";

/** How many rounds a path estimate remembers. */
export interface PathEstimateWindow {
  /** Rounds whose quietest ping sets the propagation floor a burst subtracts. Default 16. */
  readonly floorRounds?: number;
  /** Burst results the reported throughput is the median of. Default 5. */
  readonly burstRounds?: number;
}

/** What one path's estimate says after a round. */
export interface PathEstimateValue {
  readonly rttMs: number;
  readonly jitterMs: number;
  readonly throughputBytesPerSec: number | null;
  /** Burst results behind `throughputBytesPerSec`. */
  readonly bursts: number;
}

/**
 * One probed path's running estimate, over the last few rounds rather than the last one.
 * A burst's transfer time is its elapsed time less the path's propagation delay; taking that
 * delay from the quietest ping of the recent rounds (not only this round's, which a busy event
 * loop or a queue inflates together) keeps the result from ever exceeding the path's rate on
 * noise — noise can only make a burst look slower. The reported rate is the median of the last
 * few bursts, so one slow round does not swing it either. Pure; bounded memory.
 */
export class PathEstimate {
  private readonly floors: number[] = [];
  private readonly rates: number[] = [];
  private readonly floorRounds: number;
  private readonly burstRounds: number;

  constructor(window: PathEstimateWindow = {}) {
    this.floorRounds = Math.max(1, window.floorRounds ?? 16);
    this.burstRounds = Math.max(1, window.burstRounds ?? 5);
  }

  /**
   * Takes one round: its ping round trips (at least one; PolicyInputError otherwise) and, when the
   * round sent a burst that was acknowledged, its bytes and elapsed time from first send to ack.
   */
  addRound(
    rttsMs: readonly number[],
    burst?: { readonly bytes: number; readonly elapsedMs: number },
  ): PathEstimateValue {
    const { rttMs, jitterMs } = summarizeRtts(rttsMs);
    push(this.floors, Math.min(...rttsMs), this.floorRounds);
    if (burst !== undefined && burst.bytes > 0)
      push(this.rates, burstThroughput(burst.bytes, burst.elapsedMs, Math.min(...this.floors)), this.burstRounds);
    return {
      rttMs,
      jitterMs,
      throughputBytesPerSec: this.rates.length === 0 ? null : median(this.rates),
      bursts: this.rates.length,
    };
  }
}

function push(xs: number[], x: number, max: number): void {
  xs.push(x);
  if (xs.length > max) xs.shift();
}
