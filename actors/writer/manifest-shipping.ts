import type { Clock, Counters } from "../../core/index.ts";
import { encodeMessage, unitSubject } from "../../transport/protocol/index.ts";
import { SENDER_HEADER, type Transport } from "../../transport/index.ts";
import { laneManifestSpec, MANIFEST_MAX_LANES } from "../../transport/protocol/index.ts";
import type { VolumeWriterConfig } from "./writer-config.ts";
import type { WriterCut } from "./writer-ports.ts";

/**
 * Ships a multi-lane volume's consistency manifests to the holders of its lanes: the newest cut,
 * whenever it is newer than the last one shipped, to every first hop of every lane (each forwards
 * it along its lane). An unchanged newest cut goes again every `repeatMs`, so a manifest lost on
 * the wire or a holder restarted since is caught up. Manifests between two shipments are never
 * sent: holders keep a thinned series, and evaluation falls back to the newest one that survives.
 */
export class ManifestShipper {
  private shippedLsn = -1;
  private shippedAt = -Infinity;

  constructor(
    private readonly config: Pick<VolumeWriterConfig, "writerId" | "volume" | "term">,
    private readonly seams: { transport: Transport; clock: Clock; counters: Counters },
    private readonly repeatMs: number,
    /** Counter prefix: `manifest` for raw lanes, `coalesced_manifest` for a coalesced stream's derived lanes. */
    private readonly counterPrefix = "manifest",
  ) {}

  /** Ships the newest of `cuts` (oldest first) to the first hops (`hops`) of `lanes` when due. */
  ship(
    cuts: readonly WriterCut[],
    lanes: readonly { readonly lane: string; readonly hops: readonly string[] }[],
  ): void {
    const newest = cuts[cuts.length - 1];
    if (newest === undefined || lanes.length < 2 || lanes.length > MANIFEST_MAX_LANES) return;
    const now = this.seams.clock.now();
    if (newest.lsn === this.shippedLsn && now - this.shippedAt < this.repeatMs) return;
    const cut = Object.entries(newest.lanes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const data = encodeMessage(laneManifestSpec, {
      writer: this.config.writerId,
      volume: this.config.volume,
      term: this.config.term,
      lsn: newest.lsn,
      cut,
    });
    const headers = { [SENDER_HEADER]: this.config.writerId };
    for (const l of lanes)
      for (const hop of l.hops)
        this.seams.transport.publish(unitSubject(hop, this.config.volume, l.lane), data, { headers });
    this.seams.counters.inc(`${this.counterPrefix}_${newest.lsn === this.shippedLsn ? "reshipped" : "shipped"}`);
    this.shippedLsn = newest.lsn;
    this.shippedAt = now;
  }
}
