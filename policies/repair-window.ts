import { RangeSet } from "../lanes/index.ts";
import { tallyCommits } from "./commit-log.ts";
import type { EvaluationState, Link } from "./evaluation-state.ts";
import { widestPathsTo } from "./network-paths.ts";
import { recoveryTime } from "./recovery-time.ts";
import type { LinkLoad } from "./route-measurements.ts";
import { liveRanges, siteUsable, type SurvivorView } from "./survivor-view.ts";

/**
 * What a link has left for repair under failure load: its (measured or configured) bandwidth
 * minus the steady load measured on it from sending sites that survive. Never negative. Pure.
 */
export function sharedRepairBandwidth(
  link: Link,
  loads: readonly LinkLoad[],
  senderSurvives: (site: string) => boolean,
): number {
  let load = 0;
  for (const l of loads) if (l.link === link.id && senderSurvives(l.fromSite)) load += l.bytesPerSec;
  return Math.max(0, link.bandwidthBytesPerSec - load);
}

/** The repair after one step of a timeline, judged against the time to the next allowed failure. */
export interface RepairWindowFinding {
  /** 1-based step whose losses the repair re-makes. */
  readonly step: number;
  readonly missingBytes: number;
  /** Repair time (s); null when some missing range has no surviving path to the repair site. */
  readonly repairSec: number | null;
  readonly windowSec: number;
  /** Narrowest residual bandwidth a missing range is fetched over (bytes/s); null when nothing moves. */
  readonly bandwidthBytesPerSec: number | null;
  /** Whether that bandwidth came from a route measurement. */
  readonly measured: boolean;
  readonly met: boolean;
  /** Empty when met; otherwise one sentence naming repair time against the window. */
  readonly reason: string;
}

const fmtBytes = (b: number) =>
  b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`;

/**
 * The repair after step `step` (1-based): every range a holder lost in that step and a survivor
 * still has is copied to `repairSite`, from the best-connected survivor over the widest surviving
 * path whose links each give repair only what the surviving senders' steady load leaves
 * (`sharedRepairBandwidth`); sources are fetched one after another (conservative). Repair time is
 * the recovery phases of `state.recovery` plus that transfer. It is met when it is at most
 * `windowSec`, the time until the next allowed failure. Pure.
 */
export function repairWindowFinding(
  state: EvaluationState,
  before: SurvivorView,
  after: SurvivorView,
  step: number,
  windowSec: number,
  repairSite: string,
): RepairWindowFinding {
  const kept = new Set(after.claims);
  const lost = before.claims.filter((lc) => !kept.has(lc));
  const loads = state.linkLoads ?? [];
  const linkById = new Map(state.links.map((l) => [l.id, l]));
  const residual = (l: Link) => sharedRepairBandwidth(l, loads, (s) => siteUsable(after, s));
  const paths = widestPathsTo(state, after, repairSite, residual);
  let missingBytes = 0;
  let transferSec = 0;
  let bounded = siteUsable(after, repairSite);
  let narrowest: number | null = null;
  const lanes = [...new Set(lost.map((lc) => lc.claim.lane))].sort();
  for (const lane of lanes) {
    let need = RangeSet.EMPTY;
    for (const lc of lost) if (lc.claim.lane === lane) need = need.union(lc.claim.ranges);
    need = need.intersect(liveRanges(after, lane)).subtract(liveRanges(after, lane, (lc) => lc.site === repairSite));
    const sources = after.claims
      .filter((lc) => lc.claim.lane === lane && paths.has(lc.site))
      .sort((x, y) => paths.get(y.site)! - paths.get(x.site)! || (x.holder < y.holder ? -1 : 1));
    for (const lc of sources) {
      const take = need.intersect(lc.claim.ranges);
      if (take.isEmpty) continue;
      need = need.subtract(take);
      const bytes = tallyCommits(state.commits, lane, take).bytes;
      const bw = paths.get(lc.site)!;
      missingBytes += bytes;
      if (bw !== Infinity && bytes > 0) {
        transferSec += bytes / bw;
        narrowest = narrowest === null ? bw : Math.min(narrowest, bw);
      }
    }
    if (!need.isEmpty) bounded = false;
  }
  // Measured when the bottleneck (a link whose share equals the narrowest) carries a measured bandwidth.
  const measured =
    narrowest !== null &&
    [...linkById.values()].some((l) => l.measuredAgeMs !== undefined && residual(l) === narrowest);
  const repairSec = bounded ? recoveryTime(state.recovery, missingBytes, transferSec).totalSec : null;
  const met = repairSec !== null && repairSec <= windowSec;
  const over =
    narrowest === null
      ? ""
      : ` (${fmtBytes(missingBytes)} over ${fmtBytes(narrowest)}/s ${measured ? "measured" : "configured"}, shared ` +
        `with surviving traffic)`;
  const reason = met
    ? ""
    : repairSec === null
      ? `repair after step ${step} is unbounded (no surviving path to ${repairSite}), next allowed failure in ` +
        `${windowSec} s`
      : `repair after step ${step} takes ${repairSec.toFixed(1)} s${over}, next allowed failure in ${windowSec} s`;
  return { step, missingBytes, repairSec, windowSec, bandwidthBytesPerSec: narrowest, measured, met, reason };
}
