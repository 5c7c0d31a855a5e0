/**
 * Why a holder captures units later than the first copy (pure): what its inbound leg did. A leg
 * that carried less than the stream queues units, so the lag grows while the writer streams;
 * otherwise the leg kept up and the lag is its latency plus time spent in the processes (and the
 * sender's own lag, further down the path).
 */
import { edgeBetween, type Deployment } from "./deployment.ts";
import type { LegRow } from "./scenario-table.ts";

/** One holder's capture lag with its reason. */
export interface CaptureLagRow {
  readonly holder: string;
  /** Median ms after the unit's first copy anywhere; null: it captured nothing. */
  readonly ms: number | null;
  /** One short phrase: "queues: …", "kept up: …", "captured nothing …". */
  readonly why: string;
}

/** Below this share of the stream a leg is behind (it queues). */
const BEHIND = 0.9;

/**
 * The rows for `d`'s first volume, fastest first. `streamBytesPerSec`: what the volume's writer
 * acknowledged per second; `carried`: holder → bytes per second its inbound leg carried.
 */
export function captureLagRows(
  d: Deployment,
  lagMs: Readonly<Record<string, number | null>>,
  streamBytesPerSec: number,
  carried: Readonly<Record<string, number>>,
): CaptureLagRow[] {
  const siteOf = (id: string) => (id === d.writer.id ? d.writer.site : d.holders.find((h) => h.id === id)?.site);
  const rows = d.holders.map((h): CaptureLagRow => {
    const ms = lagMs[h.id] ?? null;
    const legs = h.upstream.map((u) => ({ from: siteOf(u)!, edge: edgeBetween(d, siteOf(u)!, h.site) }));
    const slowest = legs.reduce((a, b) =>
      (a.edge?.bandwidthMBps ?? Infinity) <= (b.edge?.bandwidthMBps ?? Infinity) ? a : b,
    );
    const got = carried[h.id];
    const kb = (n: number) => `${Math.round(n / 1000)} kB/s`;
    let why: string;
    if (ms === null) why = "captured nothing of this volume";
    else if (got !== undefined && got < BEHIND * streamBytesPerSec)
      why =
        `queues: its leg ${slowest.from} → ${h.site} carried ${kb(got)} of the ${kb(streamBytesPerSec)} stream` +
        (slowest.edge === undefined ? "" : ` (declared ${slowest.edge.bandwidthMBps} MB/s)`);
    else if (slowest.edge !== undefined)
      why =
        `kept up: its leg ${slowest.from} → ${h.site} (${slowest.edge.latencyMs} ms one way) ` +
        `carried ${got === undefined ? "?" : kb(got)} of the ${kb(streamBytesPerSec)} stream` +
        (h.upstream.includes(d.writer.id) ? "" : `, after ${h.upstream.join(", ")}`);
    else why = "local leg";
    return { holder: h.id, ms, why };
  });
  return rows.sort((a, b) => (a.ms ?? Infinity) - (b.ms ?? Infinity));
}

/** `12 ms` or `10.2 s` or `-`. */
export const formatLag = (ms: number | null) =>
  ms === null ? "-" : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;

/** Receiving holder → bytes per second its legs of `volume` carried. */
export function carriedInto(legs: readonly LegRow[], volume: string): Record<string, number> {
  return Object.fromEntries(
    legs.filter((l) => l.volume === volume && l.receiver !== undefined).map((l) => [l.receiver!, l.bytesPerSec]),
  );
}
