import { performance } from "node:perf_hooks";
import type { Meter } from "@opentelemetry/api";
import type { Holder, HolderObservation } from "../index.ts";
import { RangeSet } from "../../lanes/index.ts";

/**
 * Units admitted and not yet receipted that one lane remembers for the latency histogram (older ones are forgotten, not
 * measured).
 */
const PENDING_PER_LANE = 65_536;

/** Receipt latency buckets in seconds: a batch delay of milliseconds up to a stalled disk. */
export const RECEIPT_LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One lane's custody at one residency, as the holder's parts hold it now. */
export interface CustodyFigure {
  readonly volume: string;
  readonly lane: string;
  readonly residency: "ram" | "protected_ram" | "disk";
  readonly bytes: number;
}

/** Splits a holder's lane key (`volume/lane`) into its labels. */
function laneLabels(key: string): { volume: string; lane: string } {
  const at = key.indexOf("/");
  return at < 0 ? { volume: "", lane: key } : { volume: key.slice(0, at), lane: key.slice(at + 1) };
}

/**
 * A holder's figures for `/metrics` that its counters do not carry: bytes in custody and credits
 * outstanding per lane (read from the lanes at scrape time), units rejected per lane and code, and
 * receipt latency — the time from a unit's admission by this holder to the first receipt it
 * publishes whose retained range covers the unit (measured in this process, monotonic clock).
 * Feed it the holder's observations through `observe`.
 */
export class HolderMetrics {
  private holder: Holder | undefined;
  /** `lane key\0code` -> units rejected. */
  private readonly rejections = new Map<string, number>();
  /** Lane key -> admitted units awaiting their first receipt, in admission order. */
  private readonly pending = new Map<string, { last: number; at: number }[]>();
  private latency: ((seconds: number, labels: Record<string, string>) => void) | undefined;

  /** Attaches the running holder whose lanes the gauges read. */
  attach(holder: Holder): void {
    this.holder = holder;
  }

  /** Takes one holder observation (pass it as the holder's `observe` port). */
  observe(o: HolderObservation): void {
    if (o.type === "rejected") {
      const key = `${o.lane ?? ""}\0${o.code}`;
      this.rejections.set(key, (this.rejections.get(key) ?? 0) + 1);
    } else if (o.type === "admitted") {
      let q = this.pending.get(o.lane);
      if (q === undefined) this.pending.set(o.lane, (q = []));
      q.push({ last: o.last, at: performance.now() });
      // Forget the oldest quarter at once: shifting one at a time would cost O(n) per admission while receipts lag.
      if (q.length > PENDING_PER_LANE) q.splice(0, PENDING_PER_LANE / 4);
    } else if (o.type === "receipt_published") {
      this.receipted(o.lane, o.residency, RangeSet.parse(o.retained));
    }
  }

  private receipted(key: string, residency: string, retained: RangeSet): void {
    const q = this.pending.get(key);
    if (q === undefined || q.length === 0 || retained.isEmpty) return;
    const now = performance.now();
    const labels = { ...laneLabels(key), residency };
    const held = this.holder?.lane(labels.volume, labels.lane)?.retained;
    // A covered unit is measured; one the holder no longer retains left custody before any receipt named it
    // (a unit flushed to disk meanwhile waits for the disk receipt of the same batch).
    const keep = q.filter((u) => {
      if (retained.has(u.last)) {
        this.latency?.(Math.max(0, now - u.at) / 1000, labels);
        return false;
      }
      return held === undefined || held.has(u.last);
    });
    this.pending.set(key, keep);
  }

  /** Bytes in custody now, per lane and residency (RAM counts as protected_ram while protection evidence holds). */
  custody(): CustodyFigure[] {
    const h = this.holder;
    if (h === undefined) return [];
    const ramKind = h.protectionOk() ? "protected_ram" : "ram";
    const out: CustodyFigure[] = [];
    for (const l of h.lanes()) {
      out.push({ volume: l.volume, lane: l.lane, residency: ramKind, bytes: l.ramBytes() });
      out.push({ volume: l.volume, lane: l.lane, residency: "disk", bytes: l.diskBytes() });
    }
    return out;
  }

  /** Registers the holder's instruments on `meter` (the histogram records from now on). */
  register(meter: Meter, id: string): void {
    const holder = { holder: id };
    meter
      .createObservableGauge("custody_holder_custody_bytes", {
        description: "unit bytes this holder keeps per lane and residency",
        unit: "By",
      })
      .addCallback((r) => {
        for (const f of this.custody())
          r.observe(f.bytes, { ...holder, volume: f.volume, lane: f.lane, residency: f.residency });
      });
    meter
      .createObservableGauge("custody_holder_credits_outstanding_bytes", {
        description: "ingress credit granted to upstream senders and not yet used or returned",
        unit: "By",
      })
      .addCallback((r) => {
        for (const l of this.holder?.lanes() ?? [])
          r.observe(l.creditsOutstanding(), { ...holder, volume: l.volume, lane: l.lane });
      });
    meter
      .createObservableCounter("custody_holder_rejected_units", {
        description: "units and requests this holder refused, per lane and error code",
        unit: "1",
      })
      .addCallback((r) => {
        for (const [key, n] of this.rejections) {
          const [lane, code] = key.split("\0") as [string, string];
          r.observe(n, { ...holder, ...(lane === "" ? { volume: "", lane: "" } : laneLabels(lane)), code });
        }
      });
    const histogram = meter.createHistogram("custody_holder_receipt_latency_seconds", {
      description: "time from a unit's admission by this holder to the first receipt it publishes covering the unit",
      unit: "s",
      advice: { explicitBucketBoundaries: RECEIPT_LATENCY_BUCKETS_S },
    });
    this.latency = (s, labels) => histogram.record(s, { ...holder, ...labels });
  }
}
