import type { Link, LinkLoad } from "./evaluation-state.ts";
export type { LinkLoad } from "./evaluation-state.ts";
import type { MeasuredEdge } from "./placement.ts";
import { PolicyInputError } from "./policy-errors.ts";

/**
 * One probed route between two peers (writer or holder processes) at two sites, as the
 * controller or `custody place` keeps it. `measuredAtMs` is on the keeper's clock: the prober
 * publishes the measurement's age, never its own timestamps, so clock skew does not age it.
 */
export interface RouteMeasurement {
  readonly from: string;
  readonly fromSite: string;
  readonly to: string;
  readonly toSite: string;
  /** Median round trip of the pings (ms). */
  readonly rttMs: number;
  /** Mean absolute difference of consecutive round trips (ms). */
  readonly jitterMs: number;
  /** Sustained throughput of the recent bursts (bytes/s, median of a few); null when the budget allowed no burst. */
  readonly throughputBytesPerSec: number | null;
  /** Transport-unit bytes per second the prober itself sent on this edge (its steady write load). */
  readonly loadBytesPerSec: number;
  readonly measuredAtMs: number;
}

/** Where a value shown next to an edge comes from. */
export const ValueSource = { measured: "measured", configured: "configured" } as const;
export type ValueSource = (typeof ValueSource)[keyof typeof ValueSource];

/** Per edge: which of its values were measured, and how old the measurement is. */
export interface EdgeSource {
  readonly from: string;
  readonly to: string;
  /** `measured` when any value of the edge came from a fresh measurement. */
  readonly source: ValueSource;
  readonly rtt: ValueSource;
  readonly bandwidth: ValueSource;
  /** Age of the measurement used (ms); null when everything is configured. */
  readonly ageMs: number | null;
}

/** Unordered site-pair key: placement and evaluation treat an edge as usable both ways. */
export function sitePairKey(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * RTT (median) and jitter (mean absolute difference of consecutive samples, in send order) of one
 * ping series. Throws PolicyInputError for an empty series or a negative or non-finite sample.
 */
export function summarizeRtts(samplesMs: readonly number[]): { rttMs: number; jitterMs: number } {
  if (samplesMs.length === 0) throw new PolicyInputError("rttSamples", "at least one round trip is needed");
  samplesMs.forEach((x, i) => {
    if (!Number.isFinite(x) || x < 0)
      throw new PolicyInputError(`rttSamples[${i}]`, `round trip ${x} is not a non-negative number`);
  });
  let d = 0;
  for (let i = 1; i < samplesMs.length; i++) d += Math.abs(samplesMs[i]! - samplesMs[i - 1]!);
  return { rttMs: median(samplesMs), jitterMs: samplesMs.length < 2 ? 0 : d / (samplesMs.length - 1) };
}

/**
 * Sustained throughput of a burst: `bytes` sent back to back, acknowledged `elapsedMs` after the
 * first byte left, over a path whose quietest round trip is `minRttMs`. One round trip is not
 * transfer time; the rest is. Never divides by less than 1 ms. Pure.
 */
export function burstThroughput(bytes: number, elapsedMs: number, minRttMs: number): number {
  return (bytes * 1000) / Math.max(1, elapsedMs - minRttMs);
}

/** What one probe round sends to one peer. */
export interface PeerProbePlan {
  readonly peer: string;
  readonly pings: number;
  /** Burst frames of `frameBytes` each; 0 or at least 2 (one frame measures no rate). */
  readonly burstFrames: number;
}

/** Sizes of one probe round: pings per peer, the bytes of one ping and of one burst frame. */
export interface ProbeShape {
  readonly pings: number;
  readonly pingBytes: number;
  readonly frameBytes: number;
}

/**
 * Splits a per-interval probe budget (bytes this prober sends) evenly between its peers: pings
 * first (fewer when the share cannot pay for all), the rest of each share as a burst of whole
 * frames. The plan never sends more than `budgetBytes` in total. Pure; throws PolicyInputError
 * for a negative budget or a non-positive ping or frame size.
 */
export function planProbeRound(budgetBytes: number, peers: readonly string[], shape: ProbeShape): PeerProbePlan[] {
  if (!(budgetBytes >= 0)) throw new PolicyInputError("budgetBytes", "must be a non-negative number");
  if (!(shape.pingBytes > 0) || !(shape.frameBytes > 0) || !(shape.pings >= 0))
    throw new PolicyInputError("probe", "ping and frame sizes must be positive");
  if (peers.length === 0) return [];
  const share = Math.floor(budgetBytes / peers.length);
  return [...peers].sort().map((peer) => {
    const pings = Math.min(Math.floor(shape.pings), Math.floor(share / shape.pingBytes));
    const frames = Math.floor((share - pings * shape.pingBytes) / shape.frameBytes);
    return { peer, pings, burstFrames: frames >= 2 ? frames : 0 };
  });
}

/** Bytes a plan sends (pings and burst frames). */
export function planBytes(plan: readonly PeerProbePlan[], shape: ProbeShape): number {
  return plan.reduce((a, p) => a + p.pings * shape.pingBytes + p.burstFrames * shape.frameBytes, 0);
}

/**
 * The newest measurement per directed peer pair, bounded: a new measurement replaces an older
 * one of the same pair, and past `maxEntries` pairs the stalest pair is forgotten.
 */
export class RouteTable {
  private readonly byPair = new Map<string, RouteMeasurement>();

  constructor(private readonly maxEntries = 1024) {}

  /** Keeps `m` unless a newer measurement of the same pair is already kept. */
  add(m: RouteMeasurement): void {
    const key = `${m.from}>${m.to}`;
    const prev = this.byPair.get(key);
    if (prev !== undefined && prev.measuredAtMs > m.measuredAtMs) return;
    this.byPair.delete(key);
    this.byPair.set(key, m);
    if (this.byPair.size > this.maxEntries) {
      let stalest: string | undefined;
      for (const [k, v] of this.byPair)
        if (stalest === undefined || v.measuredAtMs < this.byPair.get(stalest)!.measuredAtMs) stalest = k;
      this.byPair.delete(stalest!);
    }
  }

  /** Every kept measurement. */
  all(): RouteMeasurement[] {
    return [...this.byPair.values()];
  }
}

/**
 * Per site pair, the newest measurement younger than `maxAgeMs` at `nowMs` (either direction),
 * and the summed steady load of every fresh measurement on that pair, by sending site.
 */
export function freshRoutesBySitePair(
  routes: readonly RouteMeasurement[],
  nowMs: number,
  maxAgeMs: number,
): Map<string, { newest: RouteMeasurement; withThroughput?: RouteMeasurement; loads: Map<string, number> }> {
  const out = new Map<
    string,
    { newest: RouteMeasurement; withThroughput?: RouteMeasurement; loads: Map<string, number> }
  >();
  for (const m of routes) {
    if (nowMs - m.measuredAtMs > maxAgeMs || m.fromSite === m.toSite) continue;
    const key = sitePairKey(m.fromSite, m.toSite);
    const e = out.get(key) ?? { newest: m, loads: new Map<string, number>() };
    if (m.measuredAtMs > e.newest.measuredAtMs) e.newest = m;
    if (
      m.throughputBytesPerSec !== null &&
      (e.withThroughput === undefined || m.measuredAtMs > e.withThroughput.measuredAtMs)
    )
      e.withThroughput = m;
    e.loads.set(m.fromSite, (e.loads.get(m.fromSite) ?? 0) + m.loadBytesPerSec);
    out.set(key, e);
  }
  return out;
}

/**
 * Placement edges with fresh measurements (younger than `maxAgeMs`) in place of the configured
 * RTT, jitter and bandwidth; charges and dependencies stay configured. Returns the edges and,
 * per edge, which values were measured and how old they are. Pure.
 */
export function withMeasuredEdges(
  edges: readonly MeasuredEdge[],
  routes: readonly RouteMeasurement[],
  nowMs: number,
  maxAgeMs: number,
): { edges: MeasuredEdge[]; sources: EdgeSource[] } {
  const fresh = freshRoutesBySitePair(routes, nowMs, maxAgeMs);
  const sources: EdgeSource[] = [];
  const out = edges.map((e) => {
    const f = fresh.get(sitePairKey(e.from, e.to));
    if (f === undefined) {
      sources.push({
        from: e.from,
        to: e.to,
        source: ValueSource.configured,
        rtt: ValueSource.configured,
        bandwidth: ValueSource.configured,
        ageMs: null,
      });
      return e;
    }
    const bw = f.withThroughput?.throughputBytesPerSec ?? null;
    sources.push({
      from: e.from,
      to: e.to,
      source: ValueSource.measured,
      rtt: ValueSource.measured,
      bandwidth: bw === null ? ValueSource.configured : ValueSource.measured,
      ageMs: Math.max(0, nowMs - f.newest.measuredAtMs),
    });
    return {
      ...e,
      rttMs: f.newest.rttMs,
      jitterMs: f.newest.jitterMs,
      bandwidthBytesPerSec: bw ?? e.bandwidthBytesPerSec,
    };
  });
  return { edges: out, sources };
}

/**
 * Evaluation links with fresh measured throughput in place of the configured bandwidth (the
 * link then carries `measuredAgeMs`), plus the steady load measured on each link by sending
 * site. Pure.
 */
export function withMeasuredLinks(
  links: readonly Link[],
  routes: readonly RouteMeasurement[],
  nowMs: number,
  maxAgeMs: number,
): { links: Link[]; loads: LinkLoad[] } {
  const fresh = freshRoutesBySitePair(routes, nowMs, maxAgeMs);
  const loads: LinkLoad[] = [];
  const out = links.map((l) => {
    const f = fresh.get(sitePairKey(l.from, l.to));
    if (f === undefined) return l;
    for (const [fromSite, bytesPerSec] of [...f.loads].sort())
      if (bytesPerSec > 0) loads.push({ link: l.id, fromSite, bytesPerSec });
    const m = f.withThroughput;
    if (m === undefined || m.throughputBytesPerSec === null) return l;
    return { ...l, bandwidthBytesPerSec: m.throughputBytesPerSec, measuredAgeMs: Math.max(0, nowMs - m.measuredAtMs) };
  });
  return { links: out, loads };
}
