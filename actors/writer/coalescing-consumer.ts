import type { Clock, Counters } from "../../core/index.ts";
import type { WriteRecord } from "../../transport/protocol/index.ts";
import { CoalesceQueue, CoalesceInputError, type CoalesceRecord, type DerivedWindow } from "./coalesce-window.ts";
import {
  checkCoalescedStream,
  derivedLaneName,
  derivedLaneSpecs,
  type CoalescedStreamSpec,
} from "./coalesced-stream.ts";
import { ManifestShipper } from "./manifest-shipping.ts";
import type { VolumeWriterConfig } from "./writer-config.ts";
import type { Transport } from "../../transport/index.ts";
import type { WriterCut } from "./writer-ports.ts";

/**
 * The coalescing consumer at the writer (it holds the data key, so it sees plaintext records):
 * every raw record of a lane also enters that lane's open window. The windows of all lanes close
 * together — after `windowRecords` records of the volume, at the end of a write, or `windowMs`
 * after the oldest opened — so the lane heads at a close are one consistent cut of the volume: its
 * consistency manifest, in derived lane names, goes to `manifest` (volumes of two or more lanes).
 * Each closed window goes through the budgeted CoalesceQueue, and each derived window is handed to
 * `ship` (sealed into one unit of the derived lane, sequences `first..last` of the raw window).
 * Counters: `coalesce_windows`, `coalesce_raw_bytes`, `coalesce_derived_bytes`,
 * `coalesce_dropped_records`, `coalesce_window_splits`, `coalesce_backlog_ticks`.
 */

/** A derived window ready to seal: the raw window's range and commit times, the surviving records. */
export interface DerivedUnitParts {
  readonly rawLane: string;
  readonly lane: string;
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly commitTs: number[];
  readonly records: WriteRecord[];
}

interface OpenWindow {
  records: WriteRecord[];
  ts: number[];
  openedAt: number;
}

export class CoalescingConsumer {
  private readonly open = new Map<string, OpenWindow>();
  private readonly queues = new Map<string, CoalesceQueue>();
  private readonly pendingTs = new Map<string, number[]>();
  /** Records in the open windows (all lanes) and the newest record's LSN. */
  private openRecords = 0;
  private lastLsn = 0;
  /** The consistency manifest of the newest close (derived lane names), re-offered every tick. */
  private newestCut: WriterCut | undefined;

  constructor(
    private readonly spec: CoalescedStreamSpec,
    private readonly seams: {
      clock: Clock;
      counters: Counters;
      ship: (parts: DerivedUnitParts) => void;
      /** The raw lanes' heads now (a consistent cut whenever no write is half-noted). */
      heads?: () => Readonly<Record<string, number>>;
      /** Offered the newest close's manifest every tick (the shipper decides what goes on the wire). */
      manifest?: (cut: WriterCut) => void;
    },
  ) {}

  /**
   * A raw record of `lane` (same buffer as the raw unit's; never copied here). `endOfWrite` is
   * false for every piece of a write spanning lanes but its last: windows close only between
   * writes, so a close never splits one LSN across windows.
   */
  note(lane: string, rec: WriteRecord, committedAt: number, endOfWrite = true): void {
    let w = this.open.get(lane);
    if (w === undefined) this.open.set(lane, (w = { records: [], ts: [], openedAt: this.seams.clock.now() }));
    w.records.push(rec);
    w.ts.push(committedAt);
    this.openRecords++;
    this.lastLsn = rec.lsn;
    if (endOfWrite && this.openRecords >= this.spec.windowRecords) this.closeAll();
  }

  /**
   * Closes the windows once the oldest is past its age, then coalesces within the CPU budget and ships what it derived.
   */
  tick(): void {
    const now = this.seams.clock.now();
    const age = this.spec.windowMs;
    // On every group commit: a plain loop, no array per tick (closeAll ends the iteration at once).
    if (age !== undefined) {
      for (const w of this.open.values()) {
        if (now - w.openedAt < age) continue;
        this.closeAll();
        break;
      }
    }
    for (const [lane, q] of this.queues) {
      for (const d of q.tick()) this.shipDerived(lane, d);
      if (q.backlog > 0) this.seams.counters.inc("coalesce_backlog_ticks");
    }
    if (this.newestCut !== undefined) this.seams.manifest?.(this.newestCut);
  }

  /**
   * Closes every open window now and ticks (a graceful stop does not wait for the cadence; the CPU budget still holds
   * per call).
   */
  flush(): void {
    this.closeAll();
    this.tick();
  }

  /** Closes every lane's open window at once; the lane heads then are the volume's manifest. */
  private closeAll(): void {
    if (this.open.size === 0) return;
    for (const [lane, w] of [...this.open]) this.close(lane, w);
    this.openRecords = 0;
    const heads = this.seams.heads?.();
    if (heads === undefined || Object.keys(heads).length < 2) return;
    this.newestCut = {
      lsn: this.lastLsn,
      lanes: Object.fromEntries(Object.entries(heads).map(([l, seq]) => [derivedLaneName(this.spec, l), seq])),
    };
  }

  /** Raw windows closed but not yet coalesced (the CPU budget's backlog), all lanes. */
  backlog(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.backlog;
    return n;
  }

  private close(lane: string, w: OpenWindow): void {
    this.open.delete(lane);
    if (w.records.length === 0) return;
    let q = this.queues.get(lane);
    if (q === undefined) {
      q = new CoalesceQueue(
        { maxRecords: this.spec.maxWindowRecords ?? 4096, maxBytes: this.spec.maxWindowBytes ?? 8 << 20 },
        this.spec.windowsPerTick ?? 4,
      );
      this.queues.set(lane, q);
    }
    const records: CoalesceRecord[] = w.records.map((r) => ({
      kind: "write",
      seq: r.seq,
      lsn: r.lsn,
      lba: r.lba,
      data: r.data,
    }));
    const splitsBefore = q.totals.splits;
    try {
      q.push({ firstSeq: records[0]!.seq, lastSeq: records[records.length - 1]!.seq, records });
    } catch (err) {
      // Cannot happen for the writer's own contiguous records; counted, and the window is not shipped.
      this.seams.counters.inc(`coalesce_${err instanceof CoalesceInputError ? err.code : "failed"}`);
      return;
    }
    this.seams.counters.inc("coalesce_window_splits", q.totals.splits - splitsBefore);
    // Commit times wait in seq order beside the queue: a (split) derived window takes its own.
    const ts = this.pendingTs.get(lane);
    if (ts === undefined) this.pendingTs.set(lane, [...w.ts]);
    else for (const t of w.ts) ts.push(t);
  }

  private shipDerived(lane: string, d: DerivedWindow): void {
    const ts = this.pendingTs.get(lane)!.splice(0, d.sourceCutSeq - d.firstSeq + 1);
    const records: WriteRecord[] = [];
    for (const r of d.records)
      if (r.kind === "write") records.push({ seq: r.seq, lsn: r.lsn, lba: r.lba, data: r.data });
    const c = this.seams.counters;
    c.inc("coalesce_windows");
    c.inc("coalesce_raw_bytes", d.rawBytes);
    c.inc("coalesce_derived_bytes", d.derivedBytes);
    c.inc("coalesce_dropped_records", d.droppedRecords);
    this.seams.ship({
      rawLane: lane,
      lane: derivedLaneName(this.spec, lane),
      firstSeq: d.firstSeq,
      lastSeq: d.sourceCutSeq,
      commitTs: ts,
      records,
    });
  }
}

/**
 * Checks `config`'s coalesced stream and, when there is one, returns the consumer that fills its
 * derived lanes through `ship` (the writer keeps, sends and re-sends their units like raw ones,
 * only until receipted, since no controller status confirms a derived lane). A volume of several
 * lanes also ships each close's manifest to the derived lanes' first hops (counted as
 * `coalesced_manifest_shipped` / `coalesced_manifest_reshipped`; re-sent every `repeatMs`).
 */
export function openCoalescedStream(
  config: VolumeWriterConfig,
  seams: {
    transport: Transport;
    clock: Clock;
    counters: Counters;
    heads: () => Readonly<Record<string, number>>;
    repeatMs: number;
  },
  ship: (parts: DerivedUnitParts) => void,
): CoalescingConsumer | undefined {
  checkCoalescedStream(config);
  if (config.coalesced === undefined) return undefined;
  const derived = derivedLaneSpecs(config).map((spec) => ({ lane: spec.lane, hops: spec.holders }));
  const manifests = new ManifestShipper(config, seams, seams.repeatMs, "coalesced_manifest");
  return new CoalescingConsumer(config.coalesced, {
    clock: seams.clock,
    counters: seams.counters,
    ship,
    heads: seams.heads,
    manifest: (cut) => manifests.ship([cut], derived),
  });
}
