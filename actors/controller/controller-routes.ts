import type { Clock, Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import {
  RouteTable,
  sharedRepairBandwidth,
  withMeasuredLinks,
  type EvaluationState,
  type ValueSource,
} from "../../policies/index.ts";
import { decodeRouteMeasurements, parseSubjectOf, subjectFilter } from "../../transport/protocol/index.ts";
import type { Transport, TransportSubscription } from "../../transport/index.ts";

/** The controller's `routes` setting: measurements younger than `maxAgeMs` replace configured link bandwidth. */
export interface RoutesConfig {
  readonly maxAgeMs: number;
}

/**
 * The controller's view of measured routes: the newest measurement per peer pair from
 * `custody.v1.route.*` (dated on the controller's clock: arrival minus published age), put into
 * every evaluation as measured link bandwidth and the survivors' steady load on each link, and
 * into the repair estimate. Without a `routes` setting it subscribes to nothing and changes nothing.
 */
export class ControllerRoutes {
  readonly table = new RouteTable();

  constructor(private readonly config: RoutesConfig | undefined) {}

  /**
   * Subscribes to every prober's measurements (none without a `routes` setting); a bad message is counted and dropped.
   */
  listen(transport: Transport, clock: Clock, counters: Counters): TransportSubscription[] {
    if (this.config === undefined) return [];
    return [
      transport.subscribe(subjectFilter("route"), (msg) => {
        try {
          const m = decodeRouteMeasurements(msg.data, parseSubjectOf("route", msg.subject).fromPeer);
          const at = clock.now();
          for (const r of m.routes)
            this.table.add({
              from: m.from,
              fromSite: m.fromSite,
              to: r.to,
              toSite: r.toSite,
              rttMs: r.rttMs,
              jitterMs: r.jitterMs,
              throughputBytesPerSec: r.throughputBytesPerSec,
              loadBytesPerSec: r.loadBytesPerSec,
              measuredAtMs: at - r.ageMs,
            });
          counters.inc("route_measurements");
        } catch (err) {
          counters.inc(`route_${err instanceof CustodyError ? err.code : "invalid"}`);
        }
      }),
    ];
  }

  /** `state` with fresh measured link bandwidths and the links' measured steady loads (unchanged without routes). */
  apply(state: EvaluationState): EvaluationState {
    if (this.config === undefined) return state;
    const { links, loads } = withMeasuredLinks(state.links, this.table.all(), state.asOfMs, this.config.maxAgeMs);
    return { ...state, links, linkLoads: loads };
  }

  /**
   * Bandwidth a repair into `site` can count on: the widest measured link into it, less the steady
   * load measured on that link; `configured` when no fresh measurement covers a link into it.
   */
  repairBandwidth(
    state: EvaluationState,
    site: string,
    configured: number,
  ): { bytesPerSec: number; source: ValueSource } {
    const measured = state.links.filter((l) => l.measuredAgeMs !== undefined && (l.from === site || l.to === site));
    if (measured.length === 0) return { bytesPerSec: configured, source: "configured" };
    return {
      bytesPerSec: Math.max(...measured.map((l) => sharedRepairBandwidth(l, state.linkLoads ?? [], () => true))),
      source: "measured",
    };
  }
}
